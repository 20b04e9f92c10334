"""Releases and course artefacts: starter files, golden runs, zips, the nbgrader course."""
