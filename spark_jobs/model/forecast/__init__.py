"""The forecast: the model's rules played forward from the as-of (``engine``), folded by the same
folds, so a forecast is never a guess about the rules, only about the world (``world``).

``forecast_folder`` plays one folder twice: as the world is assumed (``in_sync_at``) and with
the first backfill reply of every entry lost (``latest_in_sync_at``), and says why a replica
that never catches up is blocked.
"""

from pfscope.spark_jobs.model.forecast.folder import FolderForecast, forecast_folder
from pfscope.spark_jobs.model.forecast.world import HORIZON, Transits

__all__ = ["HORIZON", "FolderForecast", "Transits", "forecast_folder"]
