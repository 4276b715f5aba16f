"""python -m validation: validation/run.py."""

from validation.run import main

main()
