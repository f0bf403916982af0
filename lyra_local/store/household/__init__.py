"""The household: who lives with this Lyra (``people.py``), how they prove it (``logins.py``, ``tokens.py``),
what they chose to share (``shared.py``), in ``household.db`` (``schema.py``), apart from every person's memory."""

from .logins import DEVICE_DAYS, SESSION_DAYS
from .people import FILENAME, PEOPLE_DIRNAME, Household, exists
from .records import ApiToken, Kind, OwnerNeedsSecret, Person, PersonNotFound, SharedVersion, clean_name, name_key
from .tokens import TOKEN_PREFIX

__all__ = ["DEVICE_DAYS", "FILENAME", "PEOPLE_DIRNAME", "SESSION_DAYS", "TOKEN_PREFIX", "ApiToken", "Household",
           "Kind", "OwnerNeedsSecret", "Person", "PersonNotFound", "SharedVersion", "clean_name", "exists",
           "name_key"]
