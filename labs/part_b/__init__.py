"""Part A & B workbook: every exercise of the handout's Part A and Part B, answered and checked on the real model or
the real library, kept in the student's browser and downloadable."""
