"""The names a population block draws from when the file gives none.

First names and family names from many languages, combined in every way
(64 x 64 = 4,096 full names). None is an English word, so a norm's words
("Will...", "Rose...") are never taken for a person's name, and none holds
" and ", which the observation format reads as a list of people.
"""

from __future__ import annotations

FIRST_NAMES: tuple[str, ...] = (
    "Aiko", "Amara", "Anika", "Arjun", "Astrid", "Ayesha", "Benedikt",
    "Bruno", "Camila", "Carmen", "Chiara", "Dalia", "Dario", "Dmitri",
    "Elif", "Emeka", "Esther", "Farid", "Fatima", "Freya", "Goran",
    "Gustavo", "Hana", "Helga", "Hiroshi", "Ignacio", "Ines", "Ivan",
    "Jamal", "Jana", "Joaquin", "Kamala", "Kenji", "Leila", "Lucas",
    "Malik", "Marta", "Mateo", "Mei", "Nadia", "Nikolai", "Noor", "Olga",
    "Omar", "Paolo", "Priya", "Rafael", "Rania", "Samir", "Sofia", "Soren",
    "Tariq", "Thandiwe", "Tomas", "Valentina", "Viktor", "Wanjiru",
    "Xavier", "Yara", "Yusuf", "Zainab", "Zoltan", "Ingrid", "Kofi")

LAST_NAMES: tuple[str, ...] = (
    "Abara", "Acheampong", "Alvarez", "Bakshi", "Bergstrom", "Bianchi",
    "Cardoso", "Castellanos", "Chaudhry", "Demir", "Dimitrov", "Dubois",
    "Ekwueme", "Eriksen", "Esposito", "Ferreira", "Fischer", "Fonseca",
    "Galli", "Gonzaga", "Haddad", "Hoffmann", "Horvath", "Ibarra", "Ishikawa",
    "Iyer", "Jensen", "Jovanovic", "Kapoor", "Kaur", "Kowalski", "Larsen",
    "Lindqvist", "Lombardi", "Mbeki", "Mendoza", "Moreau", "Nakamura",
    "Novak", "Nowak", "Okafor", "Osei", "Oyelaran", "Pereira", "Petrov",
    "Quintero", "Rahman", "Romano", "Sandoval", "Sato", "Takahashi",
    "Tanaka", "Ueda", "Umarov", "Varga", "Vasquez", "Weber", "Wojcik",
    "Xiong", "Yamada", "Yilmaz", "Zielinski", "Zhou", "Szabo")

assert len(set(FIRST_NAMES)) == len(FIRST_NAMES) == 64
assert len(set(LAST_NAMES)) == len(LAST_NAMES) == 64
