import json, sqlite3
def load_rows(db, n):
    db.executemany("insert into t values (?, ?)", ((i, "row %d" % i * 4) for i in range(n)))
def build_index(rows):
    return {r[0]: json.dumps({"id": r[0], "text": r[1]}) for r in rows}
db = sqlite3.connect(":memory:")
db.execute("create table t (id integer primary key, text)")
load_rows(db, 50000)
index = build_index(db.execute("select id, text from t").fetchall())
blobs = [bytearray(4096) for _ in range(500)]
