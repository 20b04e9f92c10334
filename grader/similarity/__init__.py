"""Similar submissions in a class, for the TA (``infralab similarity``).

- ``detect``: each pair of submissions compared, file by file over the unit's editable files,
  with copydetect's winnowing fingerprints; the starter files are its boilerplate, so code
  every student was given never makes two submissions alike;
- ``page``: the report as one HTML page (through ``servesim.htmlsafe``) and a CSV of pairs,
  both written atomically.

Submissions are read by ``grader.grading.submission`` (folders or zips, bounded, never run).
"""

# tests/grader/test_similarity.py: disguised copies score 0.91 and more; the closest pair that is
# no copy 0.33 (unit 07), 0.54 (unit 08) and 0.61 (unit 09)
THRESHOLD = 0.75
