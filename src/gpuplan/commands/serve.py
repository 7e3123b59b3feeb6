"""`gpuplan serve`: the web page and JSON API on a local port (optional ``web`` extra).

Only typer is imported at module import; FastAPI and uvicorn are imported when the command
runs. Binds 127.0.0.1 by default; on a loopback address only loopback Host headers are
accepted (a page on another site cannot reach the server through DNS rebinding).
"""

import sys
from typing import Annotated, Optional

import typer

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8000
LOOPBACK = ("127.0.0.1", "localhost", "::1", "[::1]")
ANY_ADDRESS = ("0.0.0.0", "::", "[::]")


def parse_port(value: str | None) -> int:
    from gpuplan.errors import InputError

    text = str(DEFAULT_PORT if value is None else value).strip()
    if not text.isdigit() or not 1 <= int(text) <= 65535:
        raise InputError("port", value, "must be a whole number from 1 to 65535")
    return int(text)


def allowed_hosts(host: str) -> list[str] | None:
    """Host headers to accept: loopback names on a loopback bind, any on 0.0.0.0, else the host
    itself and loopback."""
    if host in ANY_ADDRESS:
        return None
    return list(dict.fromkeys([*LOOPBACK, host.strip("[]"), host]))


def register(app: typer.Typer) -> None:
    """Add `serve` to ``app``."""

    @app.command()
    def serve(
        host: Annotated[Optional[str], typer.Option(help="Address to bind. Default 127.0.0.1 (this machine "
                                                    "only); 0.0.0.0 makes the page reachable from the network.")] = None,
        port: Annotated[Optional[str], typer.Option(help="Port. Default 8000.")] = None,
    ) -> None:
        """Serve the web page and the JSON API (OpenAPI schema at /openapi.json). Needs the web
        extra: pip install 'gpuplan[web]'."""
        from gpuplan.errors import InputError

        bind = (host or DEFAULT_HOST).strip()
        if not bind:
            raise InputError("host", host, "give an address such as 127.0.0.1")
        number = parse_port(port)
        try:
            import uvicorn

            from gpuplan.web import create_app
            application = create_app(allowed_hosts=allowed_hosts(bind))
        except ImportError as exc:
            raise InputError("web extra", exc.name or "fastapi", "is not installed; "
                             "pip install 'gpuplan[web]'") from None
        if bind not in LOOPBACK:
            sys.stderr.write(f"warning: serving on {bind}: anyone who can reach this address can use the page "
                             "(no authentication)\n")
        shown = f"[{bind}]" if ":" in bind and not bind.startswith("[") else bind
        sys.stderr.write(f"gpuplan: serving on http://{shown}:{number}/ (Ctrl+C to stop)\n")
        uvicorn.run(application, host=bind.strip("[]"), port=number, log_level="warning")
