"""Views: CLI tables, JSON, static reports, the web app. Views read the store and call stats; they never parse sources."""
