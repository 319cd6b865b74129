from evalproto.cli import main

main(prog_name="evalproto")
