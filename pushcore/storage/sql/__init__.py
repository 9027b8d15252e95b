"""The repositories, written once in SQL for SQLite and PostgreSQL (see ``dialect.py``)."""
