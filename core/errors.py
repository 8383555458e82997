"""The project's exceptions: one small tree, each message naming the thing and the next step.

KbError
├── ConfigError              a config file or a setting is wrong
├── StoreError               the store (Chroma, ledger) cannot be opened or written
├── IngestError              one file could not be ingested (the batch goes on)
│   ├── UnsupportedFile      not a PDF or DOCX (or a legacy .doc)
│   ├── EncryptedFile        encrypted and no configured password opens it
│   ├── BrokenFile           the parser could not read it
│   ├── NoText               it has no text layer / no text at all
│   ├── TooLarge             over ingest.max_file_mb, or unpacks past ingest.max_unpacked_mb
│   ├── OverMemory           its parser needed more than ingest.parse_memory_mb
│   ├── TooManyBlocks        more blocks than ingest.max_blocks
│   ├── TooManyChunks        more passages than ingest.max_chunks
│   ├── ParseTimeout         parsing took longer than ingest.file_timeout_s
│   └── SymbolicLink         a symbolic link, not followed (recorded as skipped)
├── AccessDenied             a user asked for something outside their groups
├── DirectoryUnavailable     the sign-in directory (LDAP) is down or misconfigured
└── GenerationError          the model server failed
    ├── GenerationUnavailable    cannot connect / not serving
    ├── GenerationTimeout        connect, first-token or total time limit passed
    └── PromptTooLong            the prompt does not fit the model's window
"""

from __future__ import annotations


class KbError(Exception):
    """Base of every error this project raises on purpose."""


class ConfigError(KbError):
    """A config file or a setting is wrong."""


class StoreError(KbError):
    """The store (Chroma, ledger) cannot be opened or written."""


class IngestError(KbError):
    """One file could not be ingested; `status` is what the ledger records for it."""

    status = "failed"


class UnsupportedFile(IngestError):
    status = "unsupported"


class EncryptedFile(IngestError):
    status = "encrypted"


class BrokenFile(IngestError):
    status = "broken"


class NoText(IngestError):
    status = "no_text"


class TooLarge(IngestError):
    status = "too_large"


class OverMemory(IngestError):
    status = "over_memory"


class TooManyBlocks(IngestError):
    status = "too_many_blocks"


class TooManyChunks(IngestError):
    status = "too_many_chunks"


class ParseTimeout(IngestError):
    status = "timeout"


class SymbolicLink(IngestError):
    """A symbolic link where a file was looked for: never followed, since a link in a shared
    folder can reach any file the service can read, other groups' too."""

    status = "skipped"


class AccessDenied(KbError):
    """A user asked for a document, passage or file outside their groups."""


class DirectoryUnavailable(KbError):
    """The sign-in directory (LDAP / AD) cannot be reached, or refused the service account or
    TLS; the message names the setting to check."""


class GenerationError(KbError):
    """The model server failed."""


class GenerationUnavailable(GenerationError):
    """The model server cannot be reached or is not serving."""


class GenerationTimeout(GenerationError):
    """A connect, first-token or total time limit passed."""


class PromptTooLong(GenerationError):
    """The prompt plus the answer budget does not fit the model's window."""
