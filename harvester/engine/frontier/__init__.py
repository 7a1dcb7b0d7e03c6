"""The frontier: the queues and every URL's state (on disk), the queue each URL belongs to with its quota
group's budget, the scope a URL must be in, and what becomes of a URL found in a page."""
