"""One module per feature; each exposes register(cli). ioweather.cli.COMMANDS names the module of each command."""
