"""The only code that touches the database's connections, cursors, transactions and threads: the
process's database threads (database.py), the write path's own SQL (sql.py) and, on SQLite, the agents'
calls written on the event loop's thread (loop_writes.py)."""
