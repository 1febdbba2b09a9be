"""Similar submissions: who shares code, minus what the lesson gave everyone.

    submissions --source--> code text --fingerprint--> winnowed k-gram hashes
        --minus base (starters, lesson, YAML `similarity.base`)--> pairs ranked
        --> clusters --page--> similarity.csv, similarity.json, one page per pair

A stage of its own after scoring: it reads submissions with the grading reader
(`grader.intake.load`) and never runs, imports or compiles student code. What it finds
is for the instructor only: the class overview and its own pages, never a student's
report.

The pipeline is `grader.similarity.run` (`find_similar`, `write_similarity`); importing
this package costs nothing, so that the index writer can read `similarity.json`.
"""
