"""The lean request path of writes: one HTTP/1.1 exchange on the official client's pooled connections.

A write through ``ApiClient.call_api`` walks the body with
``sanitize_for_serialization``, encodes it with ``json.dumps``, and goes through
urllib3's and ``http.client``'s request and response machinery (headers sent
and parsed through the ``email`` package, the body in a second ``send``). For
a 2 KB Deployment that is most of the client's CPU per write.
:class:`LeanRequests` sends the same request and reads the same answer with
much less: the body encoded once with orjson, the request head and body in
one ``sendall``, the answer's head parsed by splitting lines, the body read by
``Content-Length`` (or de-chunked), decoded once with orjson by the caller.

What stays the official client's: the configuration (host and its path
prefix), authentication (``update_params_for_auth``, so bearer tokens
refreshed by ``refresh_api_key_hook`` -- exec plugins, token files -- apply
as before; what the official loaders' hooks give is reused for a second,
see :meth:`LeanRequests._authenticate`), default headers and cookie, and the connections: they come
from the client's own urllib3 pool (``pool_manager``) and go back to it, so
TLS (CA, client certificates, ``verify_ssl``, ``assert_hostname``,
``tls_server_name``), the pool's size and the proxy tunnel setup are the
client's. What stays urllib3's: its retry policy (the pool's ``Retry``,
``configuration.retries``) is driven exactly as ``urlopen`` drives it --
connection errors and read errors through ``Retry.increment`` (so a POST is
not retried after a read error and a PUT is), 413/429/503 answers with
``Retry-After`` retried and slept as urllib3 does --, the connect and read
timeouts apply to the same phases, the exceptions are the same types
(``ReadTimeoutError``, ``ProtocolError``, ``MaxRetryError``, an SSL failure as
the official client's ``ApiException(status=0)``). As on the official path,
the body is read after the exchange, outside the retry loop: a connection
broken mid-body raises ``ProtocolError("Connection broken: ...")`` and is not
retried, a timeout there is ``ReadTimeoutError``.

Used only where it can be exact: kubernetes >= 37 (``param_serialize``), a
plain urllib3 >= 2 ``PoolManager`` (no proxy), no ``Expect`` header.
:func:`lean_requests` returns None otherwise and the caller keeps the
official path; an answer that redirects makes :meth:`LeanRequests.request`
return None (nothing was written) and the caller sends the request again on
the official path, which follows the redirect as before.

Thread-safety: :class:`LeanRequests` is immutable after construction apart
from its cached pool reference; any number of threads may send at once, each
on a connection of its own taken from the pool.
"""

from __future__ import annotations

import logging
import ssl
import sys
import threading
import time
import weakref
import zlib
from collections.abc import Sequence
from http.client import RemoteDisconnected
from typing import Any
from urllib.parse import quote

import orjson

__all__ = ["AUTH_REUSE_SECONDS", "Answer", "LeanRequests", "encode_body", "lean_requests"]

#: How long the credentials an official loader's refresh hook gave are reused (seconds).
AUTH_REUSE_SECONDS = 1.0

_now = time.monotonic  # the reuse's clock (a test moves it)

# Where the official client's loaders define their refresh hooks (closures made by each load).
_LOADER_MODULES = frozenset({"kubernetes.config.kube_config", "kubernetes.config.incluster_config"})


def _reusable_auth(hook: Any) -> bool:
    """Whether the credentials ``hook`` produced may be reused for a second (see ``_authenticate``)."""
    if hook is None:
        return True  # static credentials
    return getattr(hook, "__module__", None) in _LOADER_MODULES


_READ_SIZE = 65536
_MAX_HEAD = 1024 * 1024
_CACHE: weakref.WeakKeyDictionary[Any, LeanRequests | None] = weakref.WeakKeyDictionary()
_CACHE_LOCK = threading.Lock()
_POOL_LOG = logging.getLogger("urllib3.connectionpool")  # urllib3's own retry warning, kept
_REDIRECTS = frozenset((301, 302, 303, 307, 308))


def lean_requests(api_client: Any) -> LeanRequests | None:
    """The :class:`LeanRequests` of ``api_client`` (made once, cached weakly); None where it cannot be exact."""
    try:
        return _CACHE[api_client]
    except (KeyError, TypeError):
        pass
    lean = LeanRequests.create(api_client)
    with _CACHE_LOCK:
        try:
            _CACHE[api_client] = lean
        except TypeError:  # not weak-referenceable: no cache, no lean path
            return None
    return lean


def encode_body(api_client: Any, body: Any) -> bytes:
    """``body`` as JSON bytes: orjson, falling back to the client's own serialisation for what it cannot encode.

    The official client sends ``json.dumps(sanitize_for_serialization(body))``;
    for JSON-shaped dicts (what pyinformers writes) orjson produces the same
    document. Typed models or other objects inside are sanitised by the
    client first, as before. Bytes are sent as they are (an apply body, already
    encoded because its media type is not a ``*json`` one the official client
    would serialise).
    """
    if isinstance(body, (bytes, bytearray)):
        return bytes(body)
    try:
        return orjson.dumps(body)
    except TypeError:
        return orjson.dumps(api_client.sanitize_for_serialization(body))


class Answer:
    """A complete answer, shaped like the urllib3 response the callers read (status, headers, read)."""

    __slots__ = ("status", "reason", "_head", "_headers", "_body")

    def __init__(self, status: int, reason: str, head: bytes, body: bytes) -> None:
        self.status = status
        self.reason = reason
        self._head = head
        self._headers: Any = None
        self._body = body

    @property
    def headers(self) -> Any:
        """The answer's headers (a case-insensitive urllib3 ``HTTPHeaderDict``), parsed on first use."""
        if self._headers is None:
            from urllib3 import HTTPHeaderDict

            headers = HTTPHeaderDict()
            for line in self._head.decode("iso-8859-1").split("\r\n")[1:]:
                name, sep, value = line.partition(":")
                if sep:
                    headers.add(name.strip(), value.strip())
            self._headers = headers
        return self._headers

    def get_redirect_location(self) -> Any:
        if self.status in _REDIRECTS:
            return self.headers.get("location") or False
        return False

    def read(self, *args: Any, **kwargs: Any) -> bytes:
        body, self._body = self._body, b""
        return body

    def drain_conn(self) -> None:
        pass

    def close(self) -> None:
        pass

    def release_conn(self) -> None:
        pass


class LeanRequests:
    """Sends requests with bodies (writes) to the API server of one ``ApiClient``; see the module."""

    def __init__(self, api_client: Any, pool_manager: Any) -> None:
        from urllib3.util import parse_url

        # weakly: the cache maps the client to this object, which must not keep the client alive
        self._api_client = weakref.ref(api_client)
        self._pool_manager = pool_manager
        self._host_url = api_client.configuration.host.rstrip("/")
        url = parse_url(self._host_url)
        self._prefix = (url.path or "").rstrip("/")
        self._pool: Any = None
        # (valid until, the hook then installed, headers, query) of the last credentials a
        # reusable hook gave; replaced whole.
        self._auth: tuple[float, Any, dict, list] | None = None
        scheme = url.scheme or "http"
        port = url.port or (443 if scheme == "https" else 80)
        host = url.host or "localhost"
        if ":" in host and not host.startswith("["):
            host = f"[{host}]"
        # http.client's Host header: the port only when it is not the scheme's default
        self._host_header = host if port == (443 if scheme == "https" else 80) else f"{host}:{port}"

    @classmethod
    def create(cls, api_client: Any) -> LeanRequests | None:
        """A LeanRequests for ``api_client``, or None when the lean path could not behave exactly alike."""
        try:
            import urllib3
            from urllib3.connectionpool import HTTPConnectionPool
        except ImportError:  # pragma: no cover - urllib3 comes with the official client
            return None
        if (
            not str(getattr(urllib3, "__version__", "")).startswith("2.")
            or getattr(type(api_client), "param_serialize", None) is None
        ):
            return None
        configuration = getattr(api_client, "configuration", None)
        rest = getattr(api_client, "rest_client", None)
        pool_manager = getattr(rest, "pool_manager", None)
        if type(pool_manager) is not urllib3.PoolManager or not isinstance(
            getattr(configuration, "host", None), str
        ):
            return None  # a ProxyManager (configuration.proxy), a test double, another transport
        if getattr(configuration, "proxy", None):
            return None
        lean = cls(api_client, pool_manager)
        try:
            pool = lean._current_pool()
        except Exception:
            return None
        if not isinstance(pool, HTTPConnectionPool) or pool.proxy is not None:
            return None
        return lean

    def _current_pool(self) -> Any:
        pool = self._pool
        if (
            pool is None or pool.pool is None
        ):  # never fetched, or closed (evicted by the PoolManager, cleared)
            pool = self._pool = self._pool_manager.connection_from_url(self._host_url)
        return pool

    # -- the request ---------------------------------------------------------------------------
    def request(
        self,
        method: str,
        path: str,
        query: Sequence[tuple[str, Any]],
        body: Any,
        headers: dict,
        timeout: Any,
    ) -> Answer | None:
        """Send ``method path?query`` with ``body`` (JSON-encoded here) and ``headers``; the whole answer.

        ``timeout``: a ``(connect, read)`` pair, as the callers give ``call_api``.
        Returns None, having written nothing, when the server redirects (the
        caller takes the official path). Raises what the official path raises.
        """
        from kubernetes.client.exceptions import ApiException
        from urllib3.exceptions import SSLError

        api_client = self._api_client()
        if api_client is None:  # pragma: no cover - the caller holds it
            raise RuntimeError("the ApiClient is gone")
        header_params = dict(headers)
        header_params.update(api_client.default_headers)
        cookie = getattr(api_client, "cookie", None)
        if cookie:
            header_params["Cookie"] = cookie
        query_params = list(query)
        data = b"" if body is None else encode_body(api_client, body)
        self._authenticate(api_client, header_params, query_params, path, method, body)
        target = self._prefix + path
        if query_params:
            target += "?" + "&".join(f"{k}={quote(_query_value(v))}" for k, v in query_params)
        head = self._head(method, target, header_params, len(data) if body is not None else None)
        try:
            pending = self._send(
                method, target, head + data if data else head, _urllib3_timeout(timeout)
            )
        except SSLError as err:  # the official client's rest layer says so with an ApiException
            raise ApiException(status=0, reason="\n".join([type(err).__name__, str(err)])) from None
        if pending is None:
            return None
        # The body is read after the exchange, as the callers read urllib3's response: no retry,
        # and read errors surface as urllib3's response.read() raises them.
        return pending.finish()

    def _authenticate(
        self, api_client: Any, headers: dict, query: list, path: str, method: str, body: Any
    ) -> None:
        """Add the credentials to a request, as ``update_params_for_auth`` would.

        The official loaders' refresh hooks (kubeconfig: exec plugins, auth
        providers, token expiry; in-cluster: the rotated token file) rebuild
        the configuration on every call, about 75 µs a request. Their
        credentials are the same for every request and are renewed minutes
        before they expire (the kubeconfig loader's 5-minute skew, the
        in-cluster loader's one-minute re-read), so what they add is kept for
        :data:`AUTH_REUSE_SECONDS` and reused. Any other hook runs on every
        request, as on the official path, and so does any hook installed after
        the credentials were kept (each load installs a new one).
        """
        now = _now()
        configuration = api_client.configuration
        cached = self._auth
        if (
            cached is not None
            and now < cached[0]
            and cached[1] is getattr(configuration, "refresh_api_key_hook", None)
        ):
            headers.update(cached[2])
            query.extend(cached[3])
            return
        added_headers: dict = {}
        added_query: list = []
        api_client.update_params_for_auth(
            added_headers, added_query, ["BearerToken"], path, method, body
        )
        headers.update(added_headers)
        query.extend(added_query)
        hook = getattr(configuration, "refresh_api_key_hook", None)  # the one the call left
        if _reusable_auth(hook):
            self._auth = (now + AUTH_REUSE_SECONDS, hook, added_headers, added_query)

    def _head(self, method: str, target: str, headers: dict, length: int | None) -> bytes:
        lines = [
            f"{method} {target} HTTP/1.1",
            f"Host: {self._host_header}",
            "Accept-Encoding: identity",
        ]
        seen_agent = False
        for name, value in headers.items():
            text = str(value)
            if "\r" in text or "\n" in text or "\r" in name or "\n" in name or ":" in name:
                raise ValueError(f"Invalid header {name!r}")  # http.client refuses these too
            if name.lower() == "user-agent":
                seen_agent = True
            lines.append(f"{name}: {text}")
        if not seen_agent:
            from urllib3.connection import _get_default_user_agent  # what urllib3 would add

            lines.append(f"User-Agent: {_get_default_user_agent()}")
        if length is not None:
            lines.append(f"Content-Length: {length}")
        lines.append("\r\n")
        return "\r\n".join(lines).encode("latin-1")

    def _send(self, method: str, target: str, payload: bytes, timeout: Any) -> _Pending | None:
        """urllib3's ``urlopen`` loop for one complete exchange (see the module for what is kept)."""
        from urllib3.exceptions import (
            HTTPError,
            MaxRetryError,
            ProtocolError,
            ProxyError,
            SSLError,
            TimeoutError,
        )
        from urllib3.util.retry import Retry

        try:
            from ssl import SSLError as BaseSSLError
        except ImportError:  # pragma: no cover
            BaseSSLError = OSError  # type: ignore[misc,assignment]
        from http.client import HTTPException
        from ssl import CertificateError

        pool = self._current_pool()
        retries = pool.retries
        if not isinstance(retries, Retry):
            retries = Retry.from_int(retries, redirect=False, default=pool.retries)
        url = target
        while True:
            conn = None
            pending: _Pending | None = None
            clean = False
            try:
                conn = pool._get_conn()
                pending = self._exchange(pool, conn, url, payload, timeout)
                clean = True
            except (
                TimeoutError,
                HTTPException,
                OSError,
                ProtocolError,
                BaseSSLError,
                SSLError,
                CertificateError,
                ProxyError,
            ) as err:
                new: Exception = err
                if isinstance(err, (BaseSSLError, CertificateError)):
                    new = SSLError(err)
                elif isinstance(new, (OSError, HTTPException)) and not isinstance(new, HTTPError):
                    new = ProtocolError("Connection aborted.", new)
                retries = retries.increment(
                    method, url, error=new, _pool=pool, _stacktrace=sys.exc_info()[2]
                )
                retries.sleep()
                _POOL_LOG.warning(
                    "Retrying (%r) after connection broken by '%r': %s", retries, err, url
                )
            finally:
                if not clean and conn is not None:
                    conn.close()
                    pool._put_conn(conn)
            if pending is None:
                continue  # the connection broke: retry as urllib3 does (increment raised when it may not)
            answer = pending.answer
            if answer.status in _REDIRECTS and answer.get_redirect_location():
                pending.drain()
                return None
            has_retry_after = (
                bool(answer.headers.get("Retry-After")) if answer.status >= 400 else False
            )
            if retries.is_retry(method, answer.status, has_retry_after):
                try:
                    retries = retries.increment(method, url, response=answer, _pool=pool)  # type: ignore[arg-type]
                except MaxRetryError:
                    if retries.raise_on_status:
                        pending.drain()
                        raise
                    return pending
                pending.drain()
                retries.sleep(answer)  # type: ignore[arg-type]
                continue
            return pending

    def _exchange(
        self, pool: Any, conn: Any, url: str, payload: bytes, timeout_value: Any
    ) -> _Pending:
        """Connect if need be, send ``payload``, read the answer's head; the body is left to the caller."""
        from urllib3.exceptions import ReadTimeoutError
        from urllib3.util.timeout import Timeout

        timeout = pool._get_timeout(timeout_value)
        timeout.start_connect()
        conn.timeout = Timeout.resolve_default_timeout(timeout.connect_timeout)
        if conn.sock is None:
            try:
                conn.connect()
                pool._validate_conn(conn)  # urllib3's certificate warnings, as _make_request does
            except (TimeoutError, ssl.SSLError) as err:
                pool._raise_timeout(err=err, url=url, timeout_value=conn.timeout)
                raise
        else:
            pool._validate_conn(conn)
        sock = conn.sock
        sock.settimeout(conn.timeout)
        try:
            sock.sendall(payload)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the server may have answered and closed already; reading tells
        read_timeout = timeout.read_timeout
        if read_timeout == 0:
            raise ReadTimeoutError(pool, url, f"Read timed out. (read timeout={read_timeout})")
        sock.settimeout(read_timeout)
        try:
            return _read_head(pool, conn, sock)
        except (ssl.SSLError, OSError) as err:
            pool._raise_timeout(err=err, url=url, timeout_value=read_timeout)
            raise


class _Pending:
    """An answer whose head is read and whose body is still on the connection (taken from ``pool``)."""

    __slots__ = ("answer", "_pool", "_conn", "_sock", "_lower", "_rest", "_keep")

    def __init__(
        self, answer: Answer, pool: Any, conn: Any, lower: bytes, rest: bytes, keep: bool
    ) -> None:
        self.answer = answer
        self._pool = pool
        self._conn = conn
        self._sock = conn.sock
        self._lower = lower
        self._rest = rest
        self._keep = keep

    def finish(self) -> Answer:
        """Read the body into the answer and give the connection back (closed unless clean for reuse).

        Errors are urllib3's at ``response.read()``: a timeout ``ReadTimeoutError``,
        an SSL failure ``SSLError``, anything else ``ProtocolError("Connection broken: ...")``.
        """
        from http.client import HTTPException

        from urllib3.exceptions import HTTPError, ProtocolError, ReadTimeoutError, SSLError

        clean = False
        try:
            body = _read_body(self._sock, self._lower, self._rest, self.answer.status)
            if body is None:  # delimited by the connection's end
                body = self._rest + _read_to_end(self._sock)
                self._keep = False
            elif isinstance(body, tuple):  # more than the body arrived: the connection is not clean
                body = body[0]
                self._keep = False
            encoding = _header(self._lower, b"content-encoding")
            if encoding and encoding != b"identity":
                body = _decode(body, encoding)
            clean = True
        except TimeoutError as err:
            raise ReadTimeoutError(self._pool, None, "Read timed out.") from err
        except ssl.SSLError as err:
            if "read operation timed out" not in str(err):
                raise SSLError(err) from err
            raise ReadTimeoutError(self._pool, None, "Read timed out.") from err
        except HTTPError:
            raise
        except (HTTPException, OSError) as err:
            raise ProtocolError(f"Connection broken: {err!r}", err) from err
        finally:
            if not (clean and self._keep):
                self._conn.close()
            self._pool._put_conn(self._conn)
        self.answer._body = body
        return self.answer

    def drain(self) -> None:
        """Read and drop the body (errors ignored, as urllib3's ``drain_conn``), giving the connection back."""
        try:
            self.finish()
        except Exception:
            pass


def _read_head(pool: Any, conn: Any, sock: Any) -> _Pending:
    """Read up to the end of the answer's head; what came after it stays in the pending answer."""
    data = sock.recv(_READ_SIZE)
    while b"\r\n\r\n" not in data:
        if not data:
            raise RemoteDisconnected("Remote end closed connection without response")
        if len(data) > _MAX_HEAD:
            from urllib3.exceptions import ProtocolError

            raise ProtocolError("the answer's head is too long")
        more = sock.recv(_READ_SIZE)
        if not more:
            raise RemoteDisconnected("Remote end closed connection without response")
        data += more
    end = data.index(b"\r\n\r\n")
    head, rest = data[:end], data[end + 4 :]
    status_line, _, _ = head.partition(b"\r\n")
    parts = status_line.split(None, 2)
    if len(parts) < 2 or not parts[0].startswith(b"HTTP/"):
        from http.client import BadStatusLine

        raise BadStatusLine(status_line.decode("iso-8859-1", "replace"))
    try:
        status = int(parts[1])
    except ValueError:
        from http.client import BadStatusLine

        raise BadStatusLine(status_line.decode("iso-8859-1", "replace")) from None
    reason = parts[2].decode("iso-8859-1") if len(parts) > 2 else ""
    lower = head.lower()
    keep = parts[0] == b"HTTP/1.1" and b"\r\nconnection: close" not in lower
    return _Pending(Answer(status, reason, head, b""), pool, conn, lower, rest, keep)


def _urllib3_timeout(timeout: Any) -> Any:
    """What the official rest layer makes of ``_request_timeout``: a number is the total, a pair
    (connect, read); anything else None, which urllib3 takes as no timeout at all."""
    from urllib3 import Timeout

    if not timeout:
        return None
    if isinstance(timeout, (int, float)):
        return Timeout(total=timeout)
    if isinstance(timeout, tuple) and len(timeout) == 2:
        return Timeout(connect=timeout[0], read=timeout[1])
    return None


def _query_value(value: Any) -> str:
    if isinstance(value, bool):
        return str(value).lower()
    return str(value)


def _header(lower_head: bytes, name: bytes) -> bytes | None:
    """The value of header ``name`` (lower case) in a lower-cased head, stripped; None when absent."""
    key = b"\r\n" + name + b":"
    at = lower_head.find(key)
    if at < 0:
        return None
    start = at + len(key)
    end = lower_head.find(b"\r\n", start)
    return lower_head[start : end if end >= 0 else len(lower_head)].strip()


def _read_body(sock: Any, lower_head: bytes, rest: bytes, status: int) -> Any:
    """The body: bytes; a 1-tuple of bytes when extra bytes followed it; None when it runs to EOF."""
    if status in (204, 304) or 100 <= status < 200:
        return (rest,) if rest else b""
    encoding = _header(lower_head, b"transfer-encoding")
    if encoding is not None and encoding.endswith(b"chunked"):
        return _read_chunked(sock, rest)
    length_text = _header(lower_head, b"content-length")
    if length_text is None:
        return None
    from urllib3.exceptions import ProtocolError

    try:
        length = int(length_text)
    except ValueError:
        raise ProtocolError(f"bad Content-Length {length_text!r}") from None
    pieces = [rest]
    have = len(rest)
    while have < length:
        more = sock.recv(max(_READ_SIZE, length - have))
        if not more:
            raise ProtocolError(
                f"Connection broken: IncompleteRead({have} bytes read, {length - have} more expected)"
            )
        pieces.append(more)
        have += len(more)
    data = pieces[0] if len(pieces) == 1 else b"".join(pieces)
    if have > length:
        return (data[:length],)
    return data


def _read_chunked(sock: Any, data: bytes) -> Any:
    from urllib3.exceptions import ProtocolError

    out: list[bytes] = []
    pos = 0
    while True:
        eol = data.find(b"\r\n", pos)
        while eol < 0:
            more = sock.recv(_READ_SIZE)
            if not more:
                raise ProtocolError("Connection broken: the chunked body ended early")
            data += more
            eol = data.find(b"\r\n", pos)
        try:
            size = int(data[pos:eol].split(b";", 1)[0].strip(), 16)
        except ValueError:
            raise ProtocolError("Connection broken: bad chunk-size line") from None
        pos = eol + 2
        if size == 0:
            end = data.find(b"\r\n\r\n", pos - 2)
            while end < 0:  # the trailer, up to its blank line
                more = sock.recv(_READ_SIZE)
                if not more:
                    break
                data += more
                end = data.find(b"\r\n\r\n", pos - 2)
            body = b"".join(out)
            if end >= 0 and end + 4 < len(data):
                return (body,)
            return body
        while len(data) < pos + size + 2:
            more = sock.recv(max(_READ_SIZE, pos + size + 2 - len(data)))
            if not more:
                raise ProtocolError("Connection broken: the chunked body ended early")
            data += more
        out.append(data[pos : pos + size])
        pos += size + 2


def _read_to_end(sock: Any) -> bytes:
    pieces: list[bytes] = []
    while True:
        more = sock.recv(_READ_SIZE)
        if not more:
            return b"".join(pieces)
        pieces.append(more)


def _decode(body: bytes, encoding: bytes) -> bytes:
    if encoding in (b"gzip", b"x-gzip"):
        return zlib.decompress(body, 16 + zlib.MAX_WBITS)
    if encoding == b"deflate":
        try:
            return zlib.decompress(body)
        except zlib.error:
            return zlib.decompress(body, -zlib.MAX_WBITS)
    from urllib3.exceptions import DecodeError

    raise DecodeError(f"unsupported Content-Encoding {encoding.decode('latin-1')!r}")
