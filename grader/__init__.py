"""infra-lab staff tools: units, reference runs, starter generation, grading and releases."""
