"""Similar submissions in a class, for the TA (``infralab similarity``).

- ``detect``: each pair of submissions compared, file by file over the unit's editable files,
  with copydetect's winnowing fingerprints; the starter files are its boilerplate, so code
  every student was given never makes two submissions alike;
- ``page``: the report as one HTML page (through ``servesim.htmlsafe``) and a CSV of pairs,
  both written atomically.

Submissions are read by ``grader.grading.submission`` (folders or zips, bounded, never run).
"""

THRESHOLD = 0.5  # tests/grader/test_similarity.py: a disguised copy scores 0.93, own code 0.33
