"""Errors meant for a person: one line naming the problem and the fix."""


class UserError(Exception):
  """Bad input (a flag, a file, a run directory). The CLI exits with code 2."""
