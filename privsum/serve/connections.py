"""Uvicorn's HTTP/1.1 protocol with a deadline for each request head (against slow-header attacks).

Uvicorn closes an idle keep-alive connection after ``timeout_keep_alive`` seconds, but sets no
deadline while a request's head (the request line and headers) is arriving: a client that opens
connections and sends a header byte now and then (Slowloris) holds them for ever, until
``limit_concurrency`` answers every other client with 503. `head_deadline_protocol` closes a
connection whose next request head has not arrived whole within ``head_timeout`` seconds of the
connection's start or of its previous response. Bodies have their own deadline
(`privsum.serve.limits.read_body`). A request h11 cannot parse is answered 400 with h11's reason
in the library's template (``The 'request' parameter of the service must be ...``).
"""

from __future__ import annotations

from typing import Any

from privsum._validation import check_real, invalid

__all__ = ["head_deadline_protocol"]


def head_deadline_protocol(head_timeout: float) -> type:
    """A subclass of Uvicorn's h11 protocol that closes connections whose request head is late (pass as ``http=``)."""
    import h11
    from uvicorn.protocols.http.h11_impl import H11Protocol

    head_timeout = check_real(head_timeout, "head_timeout", "head_deadline_protocol", low=0.0, high=86400.0, low_open=True)

    class HeadDeadlineProtocol(H11Protocol):
        _deadline: Any = None
        _awaited: Any = None

        def connection_made(self, transport: Any) -> None:
            super().connection_made(transport)
            self._protocol_error: str | None = None
            receive = self.conn.next_event

            def next_event() -> Any:  # keeps h11's reason for refusing a request, for the 400's text
                try:
                    return receive()
                except h11.RemoteProtocolError as error:
                    self._protocol_error = str(error)
                    raise

            self.conn.next_event = next_event
            self._arm()

        def send_400_response(self, msg: str) -> None:
            detail = (self._protocol_error or msg)[:200]
            text = str(invalid("request", "the service", "a well-formed HTTP/1.1 request (RFC 9112)", detail))
            super().send_400_response("".join(c if " " <= c <= "~" else "?" for c in text))

        def handle_events(self) -> None:
            super().handle_events()
            if self.cycle is not self._awaited:  # a request head arrived whole
                self._disarm()

        def on_response_complete(self) -> None:
            super().on_response_complete()
            if not self.transport.is_closing() and (self.cycle is None or self.cycle.response_complete):
                self._arm()

        def connection_lost(self, exc: Exception | None) -> None:
            self._disarm()
            super().connection_lost(exc)

        def _arm(self) -> None:
            self._disarm()
            self._awaited = self.cycle
            self._deadline = self.loop.call_later(head_timeout, self._expire)

        def _disarm(self) -> None:
            if self._deadline is not None:
                self._deadline.cancel()
                self._deadline = None

        def _expire(self) -> None:
            self._deadline = None
            idle = self.cycle is self._awaited and (self.cycle is None or self.cycle.response_complete)
            if idle and not self.transport.is_closing():
                self.transport.close()

    return HeadDeadlineProtocol
