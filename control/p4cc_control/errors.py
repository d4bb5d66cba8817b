"""Errors the controller raises. Every message is one line a user can act on:
the CLI prints str(error) as-is and exits with `exit_code`."""


class P4ccError(Exception):
    """Base of every error this package raises on purpose."""

    exit_code = 1


class SwitchUnreachable(P4ccError):
    """No gRPC connection to the switch within the deadline."""

    exit_code = 3


class PipelineMismatch(P4ccError):
    """The switch runs no pipeline, another P4Info, or rejected ours."""

    exit_code = 4


class NameNotFound(P4ccError, KeyError):
    """A table/action/field/counter/register name is not in the P4Info
    (or is ambiguous)."""

    exit_code = 5

    def __str__(self):  # KeyError would quote the message
        return self.args[0] if self.args else ""


class UnknownPort(P4ccError):
    """A port the switch does not have."""

    exit_code = 5


class ValueOutOfRange(P4ccError, ValueError):
    """A value that does not fit its field (or cannot be parsed for it)."""

    exit_code = 6


class NotPrimary(P4ccError):
    """Another controller is primary for this device (or took over)."""

    exit_code = 7


class TargetError(P4ccError):
    """A target-specific knob failed (Thrift CLI, admin API, unsupported)."""

    exit_code = 8


class WriteError(P4ccError):
    """The switch rejected a Write; carries the per-update errors."""

    exit_code = 9

    def __init__(self, message, errors=()):
        super().__init__(message)
        # [(index, canonical_code, message)] for every update that failed.
        self.errors = list(errors)

    def codes(self):
        return {code for _, code, _ in self.errors}
