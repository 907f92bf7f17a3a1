"""Configuration: one pydantic-settings model per role, defaults in one place.

Every value comes from, in order: the command-line flags that were given (the CLI
passes only those), then ``SESSIONQ_<NAME>`` environment variables, then the defaults
below. Nested models (the Kafka connection, the tool limits) keep their fields' flat
names in the environment: ``SESSIONQ_BOOTSTRAP``, not ``SESSIONQ_KAFKA__BOOTSTRAP``,
so the variables read the same as the flags. The README's configuration table is
checked against these models by a test.
"""

from indexer.environment import ENV_PREFIX, env_name
from indexer.formats import SourceFormat
from indexer.settings.base import (
    DLQ_TOPIC,
    EVENTS_TOPIC,
    FORMAT_DESCRIPTION,
    LINEAGE_TOPIC,
    REPLIES_TOPIC,
    REQUESTS_TOPIC,
    DataDirSettings,
    FlatEnvSource,
    RedactingSettings,
    RetentionSettings,
    RoleSettings,
    ServiceSettings,
    StoreWriterSettings,
    flat_fields,
    nest,
    nested_model,
)
from indexer.settings.kafka import KafkaSettings, SaslMechanism, SecurityProtocol
from indexer.settings.roles import (
    BatchSettings,
    IndexerSettings,
    IngestSettings,
    S3Settings,
    SnapshotCreateSettings,
    SnapshotPublishingSettings,
    SnapshotRestoreSettings,
    SnapshotStorageSettings,
    parse_duration,
)

__all__ = [
    "DLQ_TOPIC",
    "ENV_PREFIX",
    "EVENTS_TOPIC",
    "FORMAT_DESCRIPTION",
    "LINEAGE_TOPIC",
    "REPLIES_TOPIC",
    "REQUESTS_TOPIC",
    "BatchSettings",
    "DataDirSettings",
    "FlatEnvSource",
    "IndexerSettings",
    "IngestSettings",
    "KafkaSettings",
    "RedactingSettings",
    "RetentionSettings",
    "RoleSettings",
    "S3Settings",
    "SaslMechanism",
    "SecurityProtocol",
    "ServiceSettings",
    "SnapshotCreateSettings",
    "SnapshotPublishingSettings",
    "SnapshotRestoreSettings",
    "SnapshotStorageSettings",
    "SourceFormat",
    "StoreWriterSettings",
    "env_name",
    "flat_fields",
    "nest",
    "nested_model",
    "parse_duration",
]
