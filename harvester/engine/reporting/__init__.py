"""What a crawl tells: its counters and figures, the reports written at its end and on checkpoint,
progress-statistics.log and the launch's other logs."""
