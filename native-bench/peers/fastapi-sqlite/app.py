"""FastAPI + SQLite peer of the native bench (contract: ../README.md, schema: ../schema.sql).

The stack a Python team would otherwise deploy: FastAPI on uvicorn (uvloop, httptools) and the
standard library's sqlite3, all from Debian's packages (python3-fastapi 0.92 / pydantic v1,
python3-uvicorn 0.17.6, starlette 0.26.1). Run it with Debian's interpreter, not a pyenv one:

    cd native-bench/peers/fastapi-sqlite
    DATA_DIR=/tmp/peer-data PORT=8123 /usr/bin/python3 -m uvicorn app:app \
        --host 127.0.0.1 --port 8123 --workers 2 --loop uvloop --http httptools \
        --log-level warning --no-access-log

or, equivalently, `DATA_DIR=... PORT=... [WORKERS=2] /usr/bin/python3 app.py`, which passes the
same options to uvicorn.run (with `-m uvicorn`, PORT is only read by whoever writes --port).

Durability (the contract): each base64Image is decoded, written to DATA_DIR/images/<uuid4>.jpg and
fdatasync'ed; only then does one transaction insert the event and its metadata rows, committed
with journal_mode=WAL and synchronous=FULL; only then is 201 sent. Like the Node peer it skips the
directory fsync after creating an image file (../README.md lists what the peers leave out).

Concurrency design: the handlers that touch the disk are plain `def` endpoints, so FastAPI runs
them in its thread pool (anyio, 40 threads) and the event loop never blocks on fsync or SQLite.
Each pool thread owns one sqlite3 connection (threading.local; the default check_same_thread=True
then holds by construction), with busy_timeout=30000 so that the other uvicorn worker process's
writes are waited for rather than failing. SQLite has one writer at a time anyway, so within a
process writers queue on a threading.Lock instead of spinning in SQLite's sleep-and-retry busy
handler (whose 1, 2, 5, 10 ... ms sleeps would only add latency); image writes and fdatasync
happen before that lock, in parallel. sqlite3 releases the GIL while SQLite runs (including the
commit's fsync), and its per-connection statement cache keeps the parametrised statements
prepared.
"""
import base64
import binascii
import json
import math
import mimetypes
import os
import sqlite3
import stat as stat_module
import threading
import time
import uuid
from decimal import Decimal
from pathlib import Path
from typing import Dict, List, Optional, Union

from fastapi import FastAPI, HTTPException, Query, Request
from fastapi.responses import FileResponse, Response, StreamingResponse
from pydantic import BaseModel, Extra, StrictBool, StrictFloat, StrictInt, StrictStr

SCHEMA_PATH = Path(__file__).resolve().parent.parent / "schema.sql"
DATA_DIR = Path(os.environ["DATA_DIR"]).resolve() if os.environ.get("DATA_DIR") else None  # checked at startup
IMAGES_DIR = DATA_DIR / "images" if DATA_DIR else None
DB_PATH = DATA_DIR / "events.db" if DATA_DIR else None

MAX_LIMIT = 1000
DEFAULT_LIMIT = 100
# Partial (206) answers up to this size are read in one pread; larger ones are streamed.
RANGE_READ_AT_ONCE = 1 << 20
STREAM_CHUNK = 64 * 1024

mimetypes.init()
app = FastAPI(title="fastapi-sqlite bench peer")


# --- Request model -------------------------------------------------------------------------
# A pydantic model rather than request.json(): it is what a FastAPI team writes (the 422 comes in
# FastAPI's standard shape and the schema shows up in /docs), and it costs little here because
# only the fields the server reads are declared; everything else passes through untouched
# (extra = allow) into the stored body. Strict types, because pydantic v1 coerces otherwise
# (a numeric event_schema would silently become a string, "42" in custom_metadata would become 42).
MetadataValue = Union[StrictStr, StrictBool, StrictInt, StrictFloat]


class ImageIn(BaseModel):
    base64Image: Optional[StrictStr] = None

    class Config:
        extra = Extra.allow


class EventIn(BaseModel):
    inference_timestamp: StrictStr
    event_schema: StrictStr
    device_id: Optional[StrictStr] = None
    workflow_id: Optional[StrictStr] = None
    custom_metadata: Dict[str, MetadataValue] = {}
    images: List[ImageIn] = []

    class Config:
        extra = Extra.allow


# --- Database ------------------------------------------------------------------------------
_local = threading.local()
_write_lock = threading.Lock()


def _connect() -> sqlite3.Connection:
    # isolation_level=None: no implicit transactions; writes say BEGIN IMMEDIATE themselves, so a
    # writer takes the write lock up front (and waits on busy_timeout) instead of failing on
    # upgrade from a read snapshot.
    conn = sqlite3.connect(DB_PATH, isolation_level=None, timeout=5.0)
    conn.execute("PRAGMA busy_timeout = 30000")
    # journal_mode=WAL is a property of the file (set by schema.sql); synchronous is per connection.
    conn.execute("PRAGMA synchronous = FULL")
    return conn


def db() -> sqlite3.Connection:
    """This thread's connection, opened on first use."""
    conn = getattr(_local, "conn", None)
    if conn is None:
        conn = _local.conn = _connect()
    return conn


@app.on_event("startup")
def startup() -> None:
    # Runs in every worker process. CREATE ... IF NOT EXISTS makes it idempotent, and busy_timeout
    # makes the second process wait while the first one switches a new file to WAL.
    if DATA_DIR is None:
        raise RuntimeError("DATA_DIR is not set")
    IMAGES_DIR.mkdir(parents=True, exist_ok=True)
    conn = _connect()
    try:
        conn.executescript(SCHEMA_PATH.read_text())
        mode = conn.execute("PRAGMA journal_mode").fetchone()[0]
        if mode != "wal":
            raise RuntimeError(f"journal_mode is {mode}, expected wal")
    finally:
        conn.close()


# --- Helpers -------------------------------------------------------------------------------
def js_number(value: Union[int, float]) -> str:
    """String(value) as JavaScript spells it (ECMAScript Number::toString), so both peers store
    the same text: 42 -> '42', 42.0 -> '42', 1.5 -> '1.5', 1e-7 -> '1e-7', 1e21 -> '1e+21'."""
    if isinstance(value, int):
        if abs(value) < 2**53:
            return str(value)
        value = float(value)  # JSON.parse would have made it a double
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    if value == 0:
        return "0"
    sign = "-" if value < 0 else ""
    # repr is the shortest round-tripping decimal, the same digits JavaScript chooses.
    _, digit_tuple, exponent = Decimal(repr(abs(value))).as_tuple()
    all_digits = "".join(map(str, digit_tuple))
    digits = all_digits.rstrip("0")
    exponent += len(all_digits) - len(digits)
    k = len(digits)
    n = exponent + k  # value = 0.digits * 10^n
    if k <= n <= 21:
        text = digits + "0" * (n - k)
    elif 0 < n <= 21:
        text = digits[:n] + "." + digits[n:]
    elif -6 < n <= 0:
        text = "0." + "0" * (-n) + digits
    else:
        e = n - 1
        text = digits[0] + ("." + digits[1:] if k > 1 else "") + "e" + ("+" if e >= 0 else "-") + str(abs(e))
    return sign + text


def metadata_text(value) -> str:
    """custom_metadata value as stored in event_metadata.value: String(value) in JS terms."""
    if isinstance(value, str):
        return value
    if isinstance(value, bool):  # before int: bool is an int in Python
        return "true" if value else "false"
    return js_number(value)


def decode_image(text: str, field: str) -> bytes:
    """Strict base64 (an optional data: URI prefix allowed, as the store allows it); an invalid
    payload is a 400, as in the store (docs/API.md, "Errors": E3)."""
    if text.startswith("data:"):
        comma = text.find(";base64,")
        if comma < 0:
            raise HTTPException(400, f"{field} is not valid base64")
        text = text[comma + len(";base64,"):]
    try:
        data = base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        raise HTTPException(400, f"{field} is not valid base64")
    if not data:
        raise HTTPException(400, f"{field} is empty")
    return data


def write_durably(path: Path, data: bytes) -> None:
    # 'x': a fresh uuid4 name never exists; fail loudly rather than overwrite if it somehow does.
    with open(path, "xb") as f:
        f.write(data)
        f.flush()
        os.fdatasync(f.fileno())


def json_dumps(value) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def iso_ms(ms: int) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(ms // 1000)) + f".{ms % 1000:03d}Z"


# --- Routes --------------------------------------------------------------------------------
@app.get("/health")
async def health():
    # The database is opened (and the schema applied) at startup, before the first request.
    return {"status": "ok"}


INSERT_EVENT = (
    "INSERT INTO events (id, created_at, device_id, event_schema, workflow_id, body) "
    "VALUES (?, ?, ?, ?, ?, ?)"
)
INSERT_METADATA = "INSERT INTO event_metadata (key, value, event_id) VALUES (?, ?, ?)"


@app.post("/v2/events", status_code=201)
def create_event(event: EventIn):
    body = event.dict(exclude_unset=True)
    images = body.get("images") or []

    # Decode everything first, so a bad payload leaves no files behind.
    decoded = []
    for i, image in enumerate(images):
        text = image.pop("base64Image", None)
        if text is not None:
            decoded.append((image, decode_image(text, f"images[{i}].base64Image")))

    event_id = str(uuid.uuid4())
    image_ids: List[str] = []
    written: List[Path] = []
    try:
        for image, data in decoded:
            image_id = f"{uuid.uuid4()}.jpg"
            path = IMAGES_DIR / image_id
            write_durably(path, data)
            written.append(path)
            image["image_id"] = image_id
            image_ids.append(image_id)

        created_ms = time.time_ns() // 1_000_000
        body["id"] = event_id
        body["created_at"] = iso_ms(created_ms)
        body_json = json_dumps(body)
        metadata_rows = [(key, metadata_text(value), event_id) for key, value in event.custom_metadata.items()]

        conn = db()
        with _write_lock:
            conn.execute("BEGIN IMMEDIATE")
            try:
                conn.execute(INSERT_EVENT, (event_id, created_ms, event.device_id, event.event_schema, event.workflow_id, body_json))
                if metadata_rows:
                    conn.executemany(INSERT_METADATA, metadata_rows)
                conn.execute("COMMIT")
            except BaseException:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                raise
    except BaseException:
        for path in written:  # not acknowledged, so not kept
            try:
                path.unlink()
            except OSError:
                pass
        raise
    return {"id": event_id, "image_ids": image_ids}


def parse_metadata_filter(text: str):
    """`key:value` (equality); `key:eq:value` is accepted too. The contract only asks for
    equality, so the store's other operators (ne, gt, lt, gte, lte) answer 400 rather than
    silently matching nothing."""
    key, sep, value = text.partition(":")
    if not key or not sep:
        raise HTTPException(400, f"Invalid metadata_filter '{text}': expected key:value")
    op, sep2, rest = value.partition(":")
    if sep2 and op in ("ne", "gt", "lt", "gte", "lte"):
        raise HTTPException(400, f"Invalid metadata_filter '{text}': only equality is supported")
    if sep2 and op == "eq":
        value = rest
    if value == "":
        raise HTTPException(400, f"Invalid metadata_filter '{text}': empty value")
    return key, value


@app.get("/v2/events")
def list_events(
    device_id: Optional[str] = None,
    metadata_filter: List[str] = Query(default=[]),
    limit: int = Query(default=DEFAULT_LIMIT, ge=1, le=MAX_LIMIT),
):
    filters = [parse_metadata_filter(f) for f in metadata_filter]
    where: List[str] = []
    params: list = []
    if device_id is not None:
        # Walks events_by_device (device_id, created_at) newest first; each candidate is checked
        # against event_metadata's primary key (key, value, event_id).
        where.append("e.device_id = ?")
        params.append(device_id)
        exists_filters = filters
    elif filters:
        # No device: start from the metadata index, which yields the matching ids directly; the
        # matches are then sorted by created_at (a temp B-tree: the schema has no metadata index
        # ordered by time), which is cheap for a selective filter such as batch (1 in 500).
        key, value = filters[0]
        where.append("e.id IN (SELECT event_id FROM event_metadata WHERE key = ? AND value = ?)")
        params += [key, value]
        exists_filters = filters[1:]
    else:
        exists_filters = []
    for key, value in exists_filters:
        where.append("EXISTS (SELECT 1 FROM event_metadata m WHERE m.key = ? AND m.value = ? AND m.event_id = e.id)")
        params += [key, value]
    sql = "SELECT body FROM events e"
    if where:
        sql += " WHERE " + " AND ".join(where)
    sql += " ORDER BY e.created_at DESC LIMIT ?"
    params.append(limit)

    bodies = [row[0] for row in db().execute(sql, params)]
    # The bodies are stored as JSON text already: splice them into the answer instead of
    # json.loads + json.dumps of every event (the same bytes, without the round trip).
    content = '{"events":[' + ",".join(bodies) + '],"count":' + str(len(bodies)) + "}"
    return Response(content, media_type="application/json")


@app.get("/events/count/stats")
def count_stats():
    (total,) = db().execute("SELECT count(*) FROM events").fetchone()
    return {"total_count": total}


def parse_range(header: str, size: int):
    """One `bytes=a-b` / `bytes=a-` / `bytes=-n` range -> (start, end inclusive), None when the
    header is to be ignored (malformed or several ranges: the full file is sent), or "unsatisfiable"."""
    unit, sep, spec = header.strip().partition("=")
    if unit.strip().lower() != "bytes" or not sep or "," in spec:
        return None
    first, dash, last = spec.strip().partition("-")
    first, last = first.strip(), last.strip()
    if not dash or (first and not first.isdigit()) or (last and not last.isdigit()):
        return None
    if first:
        start = int(first)
        end = int(last) if last else size - 1
        if last and end < start:
            return None  # invalid byte-range-spec: ignored (RFC 9110, 14.1.1)
        if start >= size:
            return "unsatisfiable"
        return start, min(end, size - 1)
    if not last:
        return None
    suffix = int(last)
    if suffix == 0 or size == 0:
        return "unsatisfiable"
    return max(0, size - suffix), size - 1


def _stream_file(path: Path, start: int, length: int):
    with open(path, "rb") as f:
        f.seek(start)
        while length > 0:
            chunk = f.read(min(STREAM_CHUNK, length))
            if not chunk:
                break
            length -= len(chunk)
            yield chunk


@app.get("/images/{image_id}")
def get_image(image_id: str, request: Request):
    if not image_id or "/" in image_id or "\\" in image_id or ".." in image_id or "\0" in image_id:
        raise HTTPException(400, "Invalid image id")
    path = IMAGES_DIR / image_id
    try:
        stat = os.stat(path)
    except OSError:
        raise HTTPException(404, "Image not found")
    if not stat_module.S_ISREG(stat.st_mode):
        raise HTTPException(404, "Image not found")
    size = stat.st_size
    media_type = mimetypes.guess_type(image_id)[0] or "application/octet-stream"

    header = request.headers.get("range")
    byte_range = parse_range(header, size) if header else None
    if byte_range is None:
        # Full file: FileResponse streams it from the thread pool in chunks.
        return FileResponse(path, media_type=media_type, stat_result=stat, headers={"accept-ranges": "bytes"})
    if byte_range == "unsatisfiable":
        return Response(status_code=416, headers={"content-range": f"bytes */{size}", "accept-ranges": "bytes"})
    start, end = byte_range
    length = end - start + 1
    headers = {"content-range": f"bytes {start}-{end}/{size}", "accept-ranges": "bytes"}
    if length <= RANGE_READ_AT_ONCE:
        fd = os.open(path, os.O_RDONLY)
        try:
            data = os.pread(fd, length, start)
        finally:
            os.close(fd)
        return Response(data, status_code=206, media_type=media_type, headers=headers)
    headers["content-length"] = str(length)
    return StreamingResponse(_stream_file(path, start, length), status_code=206, media_type=media_type, headers=headers)


if __name__ == "__main__":
    import uvicorn

    uvicorn.run(
        "app:app",
        host="127.0.0.1",
        port=int(os.environ["PORT"]),
        workers=int(os.environ.get("WORKERS", "2")),
        loop="uvloop",
        http="httptools",
        log_level="warning",
        access_log=False,
    )
