"""The budget's numeric bounds the schema (jobs.budget.fields) and the settings check (jobs.budget.model.
validate_settings) share, named once in a module that imports nothing: the schema's import stays free of the numpy
memory model that model.py loads (tests/test_startup.py)."""

MAX_FAILURE_RATE = 0.01
"""The most --failure-rate taken, interruptions a GPU-hour: one a GPU every 100 hours (the bound the schema had)."""
MAX_SPOT_PREEMPTIONS = 1000
"""The most --spot-preemption taken, reclaims a node-month."""
MAX_RESTART_SECONDS = 7 * 86400.0
"""The longest --restart taken, a week in seconds (jobs.budget.fields.WEEK)."""
