"""A training campaign in stages, each budgeted as `gpuplan budget` budgets it (docs/campaign.md)."""
