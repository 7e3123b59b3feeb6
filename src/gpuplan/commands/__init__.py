"""CLI command modules. Each exposes ``register(app)`` adding its Typer command(s); cli.py
calls them. Modules here import only typer at import time (heavy work inside the commands)."""
