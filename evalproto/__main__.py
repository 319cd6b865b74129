from evalproto.launch import main

main()
