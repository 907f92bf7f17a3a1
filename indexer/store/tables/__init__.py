"""SQLite: connections (``connection``), the writer's table access (``sqlite_tables``),
the writer connection's transaction (``transaction``), the schema (``schema``,
``schema.sql``) and the in-place migration of an older dir (``migrate``)."""

__all__ = ["connection", "migrate", "schema", "sqlite_tables", "transaction"]
