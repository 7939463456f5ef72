"""The answers that join domains: a job with its weather and the system's share (`why`, `job diff`),
the admin report, events, change points, UMAMI, the factors, `/metrics` and what an import changes
for the jobs. They may import every domain package and runtime/; no domain imports them."""
