"""The exception of the runtime's statuses (initrt.h); no import of the native module."""


class Error(Exception):
    """A status of the initc runtime other than INITRT_OK, with the runtime's message.
    `status` is its name, e.g. "INITRT_NOT_FOUND"."""

    def __init__(self, message, status):
        super().__init__(message)
        self.status = status
