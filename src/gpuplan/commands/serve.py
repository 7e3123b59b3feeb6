"""`gpuplan serve`: the web page and JSON API on a local port (optional ``web`` extra).

The CLI does not import the web layer: uvicorn imports the app by name
(``gpuplan.web:create_app_from_env``) and the options travel in the environment. Binds
127.0.0.1 by default; on a loopback address only loopback Host headers are accepted (a page on
another site cannot reach the server through DNS rebinding).
"""

import click

LOOPBACK = ("127.0.0.1", "localhost", "::1", "[::1]")
ANY_ADDRESS = ("0.0.0.0", "::", "[::]")
HELP = (
    "Serve the web page and the JSON API (OpenAPI schema at /openapi.json). Needs the web extra: "
    "pip install 'gpuplan[web]'."
)


def allowed_hosts(host: str) -> list[str] | None:
    """Host headers to accept: loopback names on a loopback bind, any on 0.0.0.0, else the host
    itself and loopback."""
    if host in ANY_ADDRESS:
        return None
    return list(dict.fromkeys([*LOOPBACK, host.strip("[]"), host]))


def is_loopback(host: str) -> bool:
    """Whether every address ``host`` resolves to is loopback (ipaddress.is_loopback: 127.0.0.0/8,
    ::1): 127.1 and 127.0.0.2 are, as 'localhost' is; a name that does not resolve is not."""
    import ipaddress
    import socket

    try:
        found = {info[4][0] for info in socket.getaddrinfo(host.strip("[]"), None, proto=socket.IPPROTO_TCP)}
        return bool(found) and all(ipaddress.ip_address(a.split("%")[0]).is_loopback for a in found)
    except (OSError, UnicodeError, ValueError):
        return False


def check_port_free(host: str, port: int) -> None:
    """InputError when the address cannot be bound (in use, or not an address of this machine)."""
    import errno
    import socket

    from gpuplan.errors import InputError

    bind = host.strip("[]")
    if not bind.isascii():  # 'ｌｏｃａｌｈｏｓｔ' bound (NFKC), printed and Host-checked as written
        raise InputError("host", host, "must be written in ASCII, e.g. 127.0.0.1, ::1 or localhost (a browser "
                         "sends a name's ASCII form in the Host header, which the server checks against --host)")
    family = socket.AF_INET6 if ":" in bind else socket.AF_INET
    try:  # a host that is no address (999.1.1.1, 127.0.0.1:8000, a name that does not resolve)
        socket.getaddrinfo(bind, port, family, socket.SOCK_STREAM)
    except (OSError, UnicodeError) as exc:
        why = getattr(exc, "strerror", None) or exc
        raise InputError("host", host, f"is not an address this machine can bind ({why}); give an IP address or "
                         "name without a port, e.g. 127.0.0.1 or ::1") from None
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((bind, port))
        except OSError as exc:
            field, value = ("port", port) if exc.errno == errno.EADDRINUSE else ("host", host)
            raise InputError(
                field, value, f"cannot serve on {host}:{port} ({exc.strerror or exc}); choose another --port or --host"
            ) from None


def serve_schema() -> type:
    """The options of `serve` (a pydantic schema like every command's)."""
    from typing import Annotated, Any

    from gpuplan.errors import InputError
    from gpuplan.schema import types as T
    from gpuplan.schema import vocabulary as V
    from gpuplan.schema.base import JobInputs
    from gpuplan.schema.port_field import Port

    def folder(value: Any, info) -> str:
        from pathlib import Path

        text = T.name(value, info)
        if not Path(text).is_dir():
            raise InputError("calibration_dir", text, "is not an existing folder")
        return text

    class ServeInputs(JobInputs):
        host: Annotated[
            T.Name,
            V.field(
                "127.0.0.1",
                "Address to bind: 127.0.0.1 is this machine only; 0.0.0.0 makes the page reachable from the network.",
            ),
        ]
        port: Annotated[Port, V.field(8000, "Port (1 to 65535, in decimal digits).")]
        calibration_dir: Annotated[
            T.typed(str, folder, {"type": "string"}) | None,
            V.field(
                None,
                "A folder of calibration files the API may use by name (requests name a file, never a path).",
                "none",
            ),
        ]

    return ServeInputs


def command():
    from gpuplan.commands.build import schema_options, with_schema

    ServeInputs = serve_schema()

    def callback(**flags):
        import os
        import sys

        from gpuplan.errors import InputError

        inputs = ServeInputs.parse(flags)
        try:
            import fastapi  # noqa: F401
            import uvicorn
        except ImportError as exc:
            raise InputError(
                "web extra", exc.name or "fastapi", "is not installed; pip install 'gpuplan[web]'"
            ) from None
        check_port_free(inputs.host, inputs.port)
        os.environ["GPUPLAN_ALLOWED_HOSTS"] = ",".join(allowed_hosts(inputs.host) or [])
        os.environ["GPUPLAN_CALIBRATION_DIR"] = inputs.calibration_dir or ""
        if not is_loopback(inputs.host):  # 127.1 is loopback too: it warned before
            sys.stderr.write(
                f"warning: serving on {inputs.host}: anyone who can reach this address can use the "
                "page (no authentication)\n"
            )
        shown = f"[{inputs.host}]" if ":" in inputs.host and not inputs.host.startswith("[") else inputs.host
        sys.stderr.write(f"gpuplan: serving on http://{shown}:{inputs.port}/ (Ctrl+C to stop)\n")
        uvicorn.run(
            "gpuplan.web:create_app_from_env",
            factory=True,
            host=inputs.host.strip("[]"),
            port=inputs.port,
            log_level="warning",
        )

    return with_schema(
        click.Command(
            "serve",
            callback=callback,
            params=schema_options(ServeInputs),
            help=HELP,
            short_help="The web page and JSON API.",
        ),
        ServeInputs,
    )
