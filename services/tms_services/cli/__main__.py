"""``python -m tms_services.cli``: the ``tms`` command."""

from tms_services.cli.entry import main

main()
