"""Path converters, registered once when the app is ready (``CommentsConfig.ready``), so every
URLconf may use them whatever is imported first."""

from .ids import MAX_ID


class IdConverter:
    """A positive integer id below 2**53; anything else does not match (a JSON 404), so huge
    numbers never reach the database."""

    regex = "[0-9]{1,16}"

    def to_python(self, value: str) -> int:
        number = int(value)
        if not 0 < number <= MAX_ID:
            raise ValueError(value)
        return number

    def to_url(self, value) -> str:
        return str(value)
