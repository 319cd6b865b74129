"""The database's migrations (Alembic), run by `evalproto serve` at start
(evalproto.service.store.migrate): no alembic.ini is needed. A new schema is a new
file in versions/, written by hand from the change to store.py; tests/test_service_store.py
checks that the newest revision builds exactly store.py's schema."""
