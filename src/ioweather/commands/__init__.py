"""One module per feature; each exposes register(cli). Listed in ioweather.cli.COMMAND_MODULES."""
