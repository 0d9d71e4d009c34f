from depthlab.cli import main

main()
