from depthlab._launch import main

main()
