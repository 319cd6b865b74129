"""The database's migrations (Alembic), run by `evalproto serve` at start
(evalproto.service.database.migrate): no alembic.ini is needed. A new schema is a new
file in versions/, written by hand from the change to schema.py;
tests/service/test_service_store.py checks that the newest revision builds exactly
schema.py's schema."""
