"""The handout's Part A and Part B as a workbook: every exercise answered, checked on the real model or the
real library, kept in the student's browser and downloadable."""
