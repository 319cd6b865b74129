"""The evaluation service: tasks, datasets, teams, submissions and their statistics rows
in a database (SQLite or PostgreSQL), scoring jobs run by worker processes, and an
HTTP API (`evalproto serve`; `evalproto board` is its client).

It stores each evaluation's rows, never only its score, so that every figure it shows
is a reduction of evalproto's over those rows (evalproto.api.board), and a metric added
later scores every stored submission. Needs the `serve` extra:
pip install 'evalproto[serve]'.
"""
