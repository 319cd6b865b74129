from evalproto.cli.launch import main

main()
