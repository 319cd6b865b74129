"""Alembic's environment: migrations run on the connection that `database.migrate` opens
(in its transaction), never on a URL of their own."""

from alembic import context

from evalproto.service.schema import metadata

connection = context.config.attributes["connection"]
context.configure(connection=connection, target_metadata=metadata,
                  render_as_batch=connection.dialect.name == "sqlite")
with context.begin_transaction():
    context.run_migrations()
