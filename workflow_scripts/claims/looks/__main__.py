"""python -m workflow_scripts.claims.looks: one look of seeds on demand, or the looks
gathered into one table (run.py)."""

from workflow_scripts.claims.looks.run import main

if __name__ == "__main__":
    main()
