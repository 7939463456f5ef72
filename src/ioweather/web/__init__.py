"""The dashboard: a small Starlette app over the store (`ioweather serve`, `ioweather watch`).

Every page has a JSON twin under `/api/` built by the same function, so the
numbers on screen and in the API are the same numbers. Pages come from a
registry (`ioweather.web.pages`) and say themselves whether their data exists.
"""
