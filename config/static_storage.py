"""Static files storage: hashed, compressed copies made by `manage.py collectstatic`.

`collectstatic` (run by bin/setup) copies every static file into STATIC_ROOT under a name
carrying a hash of its content (console.3f2a1b9c0d4e.css), beside a gzip (.gz) and a
brotli (.br) copy, and writes the manifest mapping each name to its hashed one. WhiteNoise
serves a hashed name with a cache lifetime of ten years (`immutable`: a changed file gets a
new name) and the compressed copy the browser accepts.

Before `collectstatic` has run (a fresh clone, a test run, a file added since) a name has
no manifest entry: its URL is then the plain name, which WhiteNoise serves from the source
folders (WHITENOISE_USE_FINDERS) uncompressed with a short cache lifetime, instead of every
page failing with "Missing staticfiles manifest entry".
"""

from __future__ import annotations

import logging

from django.contrib.staticfiles import finders
from whitenoise.storage import CompressedManifestStaticFilesStorage

logger = logging.getLogger(__name__)


class FairwayStaticFilesStorage(CompressedManifestStaticFilesStorage):
    """WhiteNoise's compressed manifest storage that falls back to plain names."""

    _warned = False

    def stored_name(self, name: str) -> str:
        try:
            return super().stored_name(name)
        except ValueError:
            # Only a name missing from the manifest (or from STATIC_ROOT) lands here. WhiteNoise
            # also asks for names that are no file at all (when it tells hashed names from
            # plain ones): those are no sign of a missing collection.
            if not FairwayStaticFilesStorage._warned and finders.find(name):
                FairwayStaticFilesStorage._warned = True
                logger.warning(
                    "static file %r is not collected: serving plain, uncompressed names; "
                    "run `manage.py collectstatic --noinput` (bin/setup does)",
                    name,
                )
            return name
