"""The one error stepsim-post reports: a bad argument or file (one message, exit 2)."""


class UserError(Exception):
    pass
