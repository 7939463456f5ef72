from ioweather.cli import main

main()
