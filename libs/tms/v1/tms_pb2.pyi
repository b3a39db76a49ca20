import datetime

from google.protobuf import empty_pb2 as _empty_pb2
from google.protobuf import field_mask_pb2 as _field_mask_pb2
from google.protobuf import struct_pb2 as _struct_pb2
from google.protobuf import timestamp_pb2 as _timestamp_pb2
from google.rpc import status_pb2 as _status_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class Catalog(_message.Message):
    __slots__ = ("name", "type", "properties", "secrets", "storage_options", "allowed_locations", "allowed_owners", "allowed_tokens", "discovery", "default_policy", "create_time", "update_time", "table_count")
    class PropertiesEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    class SecretsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    class StorageOptionsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    class DefaultPolicyEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    NAME_FIELD_NUMBER: _ClassVar[int]
    TYPE_FIELD_NUMBER: _ClassVar[int]
    PROPERTIES_FIELD_NUMBER: _ClassVar[int]
    SECRETS_FIELD_NUMBER: _ClassVar[int]
    STORAGE_OPTIONS_FIELD_NUMBER: _ClassVar[int]
    ALLOWED_LOCATIONS_FIELD_NUMBER: _ClassVar[int]
    ALLOWED_OWNERS_FIELD_NUMBER: _ClassVar[int]
    ALLOWED_TOKENS_FIELD_NUMBER: _ClassVar[int]
    DISCOVERY_FIELD_NUMBER: _ClassVar[int]
    DEFAULT_POLICY_FIELD_NUMBER: _ClassVar[int]
    CREATE_TIME_FIELD_NUMBER: _ClassVar[int]
    UPDATE_TIME_FIELD_NUMBER: _ClassVar[int]
    TABLE_COUNT_FIELD_NUMBER: _ClassVar[int]
    name: str
    type: str
    properties: _containers.ScalarMap[str, str]
    secrets: _containers.ScalarMap[str, str]
    storage_options: _containers.ScalarMap[str, str]
    allowed_locations: _containers.RepeatedScalarFieldContainer[str]
    allowed_owners: _containers.RepeatedScalarFieldContainer[str]
    allowed_tokens: _containers.RepeatedScalarFieldContainer[str]
    discovery: CatalogDiscovery
    default_policy: _containers.ScalarMap[str, str]
    create_time: _timestamp_pb2.Timestamp
    update_time: _timestamp_pb2.Timestamp
    table_count: int
    def __init__(self, name: _Optional[str] = ..., type: _Optional[str] = ..., properties: _Optional[_Mapping[str, str]] = ..., secrets: _Optional[_Mapping[str, str]] = ..., storage_options: _Optional[_Mapping[str, str]] = ..., allowed_locations: _Optional[_Iterable[str]] = ..., allowed_owners: _Optional[_Iterable[str]] = ..., allowed_tokens: _Optional[_Iterable[str]] = ..., discovery: _Optional[_Union[CatalogDiscovery, _Mapping]] = ..., default_policy: _Optional[_Mapping[str, str]] = ..., create_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., update_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., table_count: _Optional[int] = ...) -> None: ...

class CatalogDiscovery(_message.Message):
    __slots__ = ("enabled", "include", "exclude", "queue", "owner", "priority", "interval_s", "last_run_time", "last_error", "last_registered", "last_missing")
    ENABLED_FIELD_NUMBER: _ClassVar[int]
    INCLUDE_FIELD_NUMBER: _ClassVar[int]
    EXCLUDE_FIELD_NUMBER: _ClassVar[int]
    QUEUE_FIELD_NUMBER: _ClassVar[int]
    OWNER_FIELD_NUMBER: _ClassVar[int]
    PRIORITY_FIELD_NUMBER: _ClassVar[int]
    INTERVAL_S_FIELD_NUMBER: _ClassVar[int]
    LAST_RUN_TIME_FIELD_NUMBER: _ClassVar[int]
    LAST_ERROR_FIELD_NUMBER: _ClassVar[int]
    LAST_REGISTERED_FIELD_NUMBER: _ClassVar[int]
    LAST_MISSING_FIELD_NUMBER: _ClassVar[int]
    enabled: bool
    include: _containers.RepeatedScalarFieldContainer[str]
    exclude: _containers.RepeatedScalarFieldContainer[str]
    queue: str
    owner: str
    priority: int
    interval_s: int
    last_run_time: _timestamp_pb2.Timestamp
    last_error: str
    last_registered: int
    last_missing: int
    def __init__(self, enabled: _Optional[bool] = ..., include: _Optional[_Iterable[str]] = ..., exclude: _Optional[_Iterable[str]] = ..., queue: _Optional[str] = ..., owner: _Optional[str] = ..., priority: _Optional[int] = ..., interval_s: _Optional[int] = ..., last_run_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., last_error: _Optional[str] = ..., last_registered: _Optional[int] = ..., last_missing: _Optional[int] = ...) -> None: ...

class CreateCatalogRequest(_message.Message):
    __slots__ = ("catalog_id", "catalog")
    CATALOG_ID_FIELD_NUMBER: _ClassVar[int]
    CATALOG_FIELD_NUMBER: _ClassVar[int]
    catalog_id: str
    catalog: Catalog
    def __init__(self, catalog_id: _Optional[str] = ..., catalog: _Optional[_Union[Catalog, _Mapping]] = ...) -> None: ...

class GetCatalogRequest(_message.Message):
    __slots__ = ("name",)
    NAME_FIELD_NUMBER: _ClassVar[int]
    name: str
    def __init__(self, name: _Optional[str] = ...) -> None: ...

class ListCatalogsRequest(_message.Message):
    __slots__ = ("page_size", "page_token")
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    page_size: int
    page_token: str
    def __init__(self, page_size: _Optional[int] = ..., page_token: _Optional[str] = ...) -> None: ...

class ListCatalogsResponse(_message.Message):
    __slots__ = ("catalogs", "next_page_token")
    CATALOGS_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    catalogs: _containers.RepeatedCompositeFieldContainer[Catalog]
    next_page_token: str
    def __init__(self, catalogs: _Optional[_Iterable[_Union[Catalog, _Mapping]]] = ..., next_page_token: _Optional[str] = ...) -> None: ...

class UpdateCatalogRequest(_message.Message):
    __slots__ = ("catalog", "update_mask")
    CATALOG_FIELD_NUMBER: _ClassVar[int]
    UPDATE_MASK_FIELD_NUMBER: _ClassVar[int]
    catalog: Catalog
    update_mask: _field_mask_pb2.FieldMask
    def __init__(self, catalog: _Optional[_Union[Catalog, _Mapping]] = ..., update_mask: _Optional[_Union[_field_mask_pb2.FieldMask, _Mapping]] = ...) -> None: ...

class DeleteCatalogRequest(_message.Message):
    __slots__ = ("name",)
    NAME_FIELD_NUMBER: _ClassVar[int]
    name: str
    def __init__(self, name: _Optional[str] = ...) -> None: ...

class Table(_message.Message):
    __slots__ = ("name", "format", "catalog", "namespace", "table_name", "base_path", "owner", "queue", "priority", "policy", "state", "last_commit_id", "last_commit_time", "commit_count", "create_time", "update_time", "location", "discovered", "state_reason", "health_score", "last_decision", "last_operation", "last_operation_state")
    class State(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
        __slots__ = ()
        STATE_UNSPECIFIED: _ClassVar[Table.State]
        ACTIVE: _ClassVar[Table.State]
        PAUSED: _ClassVar[Table.State]
        MISSING: _ClassVar[Table.State]
    STATE_UNSPECIFIED: Table.State
    ACTIVE: Table.State
    PAUSED: Table.State
    MISSING: Table.State
    class PolicyEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    NAME_FIELD_NUMBER: _ClassVar[int]
    FORMAT_FIELD_NUMBER: _ClassVar[int]
    CATALOG_FIELD_NUMBER: _ClassVar[int]
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    TABLE_NAME_FIELD_NUMBER: _ClassVar[int]
    BASE_PATH_FIELD_NUMBER: _ClassVar[int]
    OWNER_FIELD_NUMBER: _ClassVar[int]
    QUEUE_FIELD_NUMBER: _ClassVar[int]
    PRIORITY_FIELD_NUMBER: _ClassVar[int]
    POLICY_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    LAST_COMMIT_ID_FIELD_NUMBER: _ClassVar[int]
    LAST_COMMIT_TIME_FIELD_NUMBER: _ClassVar[int]
    COMMIT_COUNT_FIELD_NUMBER: _ClassVar[int]
    CREATE_TIME_FIELD_NUMBER: _ClassVar[int]
    UPDATE_TIME_FIELD_NUMBER: _ClassVar[int]
    LOCATION_FIELD_NUMBER: _ClassVar[int]
    DISCOVERED_FIELD_NUMBER: _ClassVar[int]
    STATE_REASON_FIELD_NUMBER: _ClassVar[int]
    HEALTH_SCORE_FIELD_NUMBER: _ClassVar[int]
    LAST_DECISION_FIELD_NUMBER: _ClassVar[int]
    LAST_OPERATION_FIELD_NUMBER: _ClassVar[int]
    LAST_OPERATION_STATE_FIELD_NUMBER: _ClassVar[int]
    name: str
    format: str
    catalog: str
    namespace: str
    table_name: str
    base_path: str
    owner: str
    queue: str
    priority: int
    policy: _containers.ScalarMap[str, str]
    state: Table.State
    last_commit_id: str
    last_commit_time: _timestamp_pb2.Timestamp
    commit_count: int
    create_time: _timestamp_pb2.Timestamp
    update_time: _timestamp_pb2.Timestamp
    location: str
    discovered: bool
    state_reason: str
    health_score: int
    last_decision: str
    last_operation: str
    last_operation_state: Operation.State
    def __init__(self, name: _Optional[str] = ..., format: _Optional[str] = ..., catalog: _Optional[str] = ..., namespace: _Optional[str] = ..., table_name: _Optional[str] = ..., base_path: _Optional[str] = ..., owner: _Optional[str] = ..., queue: _Optional[str] = ..., priority: _Optional[int] = ..., policy: _Optional[_Mapping[str, str]] = ..., state: _Optional[_Union[Table.State, str]] = ..., last_commit_id: _Optional[str] = ..., last_commit_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., commit_count: _Optional[int] = ..., create_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., update_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., location: _Optional[str] = ..., discovered: _Optional[bool] = ..., state_reason: _Optional[str] = ..., health_score: _Optional[int] = ..., last_decision: _Optional[str] = ..., last_operation: _Optional[str] = ..., last_operation_state: _Optional[_Union[Operation.State, str]] = ...) -> None: ...

class RegisterTableRequest(_message.Message):
    __slots__ = ("table_id", "table", "request_id")
    TABLE_ID_FIELD_NUMBER: _ClassVar[int]
    TABLE_FIELD_NUMBER: _ClassVar[int]
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    table_id: str
    table: Table
    request_id: str
    def __init__(self, table_id: _Optional[str] = ..., table: _Optional[_Union[Table, _Mapping]] = ..., request_id: _Optional[str] = ...) -> None: ...

class GetTableRequest(_message.Message):
    __slots__ = ("name",)
    NAME_FIELD_NUMBER: _ClassVar[int]
    name: str
    def __init__(self, name: _Optional[str] = ...) -> None: ...

class ListTablesRequest(_message.Message):
    __slots__ = ("page_size", "page_token", "format", "state", "owner", "queue", "catalog", "namespace", "search", "max_health", "min_health", "order_by")
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    FORMAT_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    OWNER_FIELD_NUMBER: _ClassVar[int]
    QUEUE_FIELD_NUMBER: _ClassVar[int]
    CATALOG_FIELD_NUMBER: _ClassVar[int]
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    SEARCH_FIELD_NUMBER: _ClassVar[int]
    MAX_HEALTH_FIELD_NUMBER: _ClassVar[int]
    MIN_HEALTH_FIELD_NUMBER: _ClassVar[int]
    ORDER_BY_FIELD_NUMBER: _ClassVar[int]
    page_size: int
    page_token: str
    format: str
    state: Table.State
    owner: str
    queue: str
    catalog: str
    namespace: str
    search: str
    max_health: int
    min_health: int
    order_by: str
    def __init__(self, page_size: _Optional[int] = ..., page_token: _Optional[str] = ..., format: _Optional[str] = ..., state: _Optional[_Union[Table.State, str]] = ..., owner: _Optional[str] = ..., queue: _Optional[str] = ..., catalog: _Optional[str] = ..., namespace: _Optional[str] = ..., search: _Optional[str] = ..., max_health: _Optional[int] = ..., min_health: _Optional[int] = ..., order_by: _Optional[str] = ...) -> None: ...

class UpdateTableRequest(_message.Message):
    __slots__ = ("table", "update_mask")
    TABLE_FIELD_NUMBER: _ClassVar[int]
    UPDATE_MASK_FIELD_NUMBER: _ClassVar[int]
    table: Table
    update_mask: _field_mask_pb2.FieldMask
    def __init__(self, table: _Optional[_Union[Table, _Mapping]] = ..., update_mask: _Optional[_Union[_field_mask_pb2.FieldMask, _Mapping]] = ...) -> None: ...

class DeregisterTableRequest(_message.Message):
    __slots__ = ("name", "force")
    NAME_FIELD_NUMBER: _ClassVar[int]
    FORCE_FIELD_NUMBER: _ClassVar[int]
    name: str
    force: bool
    def __init__(self, name: _Optional[str] = ..., force: _Optional[bool] = ...) -> None: ...

class PauseTableRequest(_message.Message):
    __slots__ = ("name",)
    NAME_FIELD_NUMBER: _ClassVar[int]
    name: str
    def __init__(self, name: _Optional[str] = ...) -> None: ...

class ResumeTableRequest(_message.Message):
    __slots__ = ("name",)
    NAME_FIELD_NUMBER: _ClassVar[int]
    name: str
    def __init__(self, name: _Optional[str] = ...) -> None: ...

class ListTablesResponse(_message.Message):
    __slots__ = ("tables", "next_page_token")
    TABLES_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    tables: _containers.RepeatedCompositeFieldContainer[Table]
    next_page_token: str
    def __init__(self, tables: _Optional[_Iterable[_Union[Table, _Mapping]]] = ..., next_page_token: _Optional[str] = ...) -> None: ...

class CommitStats(_message.Message):
    __slots__ = ("files_added", "bytes_added", "operation")
    FILES_ADDED_FIELD_NUMBER: _ClassVar[int]
    BYTES_ADDED_FIELD_NUMBER: _ClassVar[int]
    OPERATION_FIELD_NUMBER: _ClassVar[int]
    files_added: int
    bytes_added: int
    operation: str
    def __init__(self, files_added: _Optional[int] = ..., bytes_added: _Optional[int] = ..., operation: _Optional[str] = ...) -> None: ...

class NotifyCommitRequest(_message.Message):
    __slots__ = ("table", "commit_id", "commit_time", "stats")
    TABLE_FIELD_NUMBER: _ClassVar[int]
    COMMIT_ID_FIELD_NUMBER: _ClassVar[int]
    COMMIT_TIME_FIELD_NUMBER: _ClassVar[int]
    STATS_FIELD_NUMBER: _ClassVar[int]
    table: str
    commit_id: str
    commit_time: _timestamp_pb2.Timestamp
    stats: CommitStats
    def __init__(self, table: _Optional[str] = ..., commit_id: _Optional[str] = ..., commit_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., stats: _Optional[_Union[CommitStats, _Mapping]] = ...) -> None: ...

class NotifyCommitResponse(_message.Message):
    __slots__ = ("duplicate",)
    DUPLICATE_FIELD_NUMBER: _ClassVar[int]
    duplicate: bool
    def __init__(self, duplicate: _Optional[bool] = ...) -> None: ...

class NotifyCommitsRequest(_message.Message):
    __slots__ = ("commits",)
    COMMITS_FIELD_NUMBER: _ClassVar[int]
    commits: _containers.RepeatedCompositeFieldContainer[NotifyCommitRequest]
    def __init__(self, commits: _Optional[_Iterable[_Union[NotifyCommitRequest, _Mapping]]] = ...) -> None: ...

class NotifyCommitsResponse(_message.Message):
    __slots__ = ("results",)
    class Result(_message.Message):
        __slots__ = ("duplicate", "error")
        DUPLICATE_FIELD_NUMBER: _ClassVar[int]
        ERROR_FIELD_NUMBER: _ClassVar[int]
        duplicate: bool
        error: _status_pb2.Status
        def __init__(self, duplicate: _Optional[bool] = ..., error: _Optional[_Union[_status_pb2.Status, _Mapping]] = ...) -> None: ...
    RESULTS_FIELD_NUMBER: _ClassVar[int]
    results: _containers.RepeatedCompositeFieldContainer[NotifyCommitsResponse.Result]
    def __init__(self, results: _Optional[_Iterable[_Union[NotifyCommitsResponse.Result, _Mapping]]] = ...) -> None: ...

class Operation(_message.Message):
    __slots__ = ("name", "table", "action", "state", "attempt", "max_attempts", "priority", "trigger", "reason", "params", "metrics", "create_time", "start_time", "end_time", "executor_id", "engine_handle", "exit_code", "result", "error", "log_tail", "cancel_requested", "retry_of", "attempts", "queue", "next_attempt_time", "attempts_used", "attempts_handed_back", "hold_reason", "progress", "benefit", "waits_for")
    class State(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
        __slots__ = ()
        STATE_UNSPECIFIED: _ClassVar[Operation.State]
        QUEUED: _ClassVar[Operation.State]
        RUNNING: _ClassVar[Operation.State]
        SUCCEEDED: _ClassVar[Operation.State]
        FAILED: _ClassVar[Operation.State]
        CANCELLED: _ClassVar[Operation.State]
        SKIPPED: _ClassVar[Operation.State]
    STATE_UNSPECIFIED: Operation.State
    QUEUED: Operation.State
    RUNNING: Operation.State
    SUCCEEDED: Operation.State
    FAILED: Operation.State
    CANCELLED: Operation.State
    SKIPPED: Operation.State
    class ParamsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    NAME_FIELD_NUMBER: _ClassVar[int]
    TABLE_FIELD_NUMBER: _ClassVar[int]
    ACTION_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    ATTEMPT_FIELD_NUMBER: _ClassVar[int]
    MAX_ATTEMPTS_FIELD_NUMBER: _ClassVar[int]
    PRIORITY_FIELD_NUMBER: _ClassVar[int]
    TRIGGER_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    PARAMS_FIELD_NUMBER: _ClassVar[int]
    METRICS_FIELD_NUMBER: _ClassVar[int]
    CREATE_TIME_FIELD_NUMBER: _ClassVar[int]
    START_TIME_FIELD_NUMBER: _ClassVar[int]
    END_TIME_FIELD_NUMBER: _ClassVar[int]
    EXECUTOR_ID_FIELD_NUMBER: _ClassVar[int]
    ENGINE_HANDLE_FIELD_NUMBER: _ClassVar[int]
    EXIT_CODE_FIELD_NUMBER: _ClassVar[int]
    RESULT_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    LOG_TAIL_FIELD_NUMBER: _ClassVar[int]
    CANCEL_REQUESTED_FIELD_NUMBER: _ClassVar[int]
    RETRY_OF_FIELD_NUMBER: _ClassVar[int]
    ATTEMPTS_FIELD_NUMBER: _ClassVar[int]
    QUEUE_FIELD_NUMBER: _ClassVar[int]
    NEXT_ATTEMPT_TIME_FIELD_NUMBER: _ClassVar[int]
    ATTEMPTS_USED_FIELD_NUMBER: _ClassVar[int]
    ATTEMPTS_HANDED_BACK_FIELD_NUMBER: _ClassVar[int]
    HOLD_REASON_FIELD_NUMBER: _ClassVar[int]
    PROGRESS_FIELD_NUMBER: _ClassVar[int]
    BENEFIT_FIELD_NUMBER: _ClassVar[int]
    WAITS_FOR_FIELD_NUMBER: _ClassVar[int]
    name: str
    table: str
    action: str
    state: Operation.State
    attempt: int
    max_attempts: int
    priority: int
    trigger: str
    reason: str
    params: _containers.ScalarMap[str, str]
    metrics: _struct_pb2.Struct
    create_time: _timestamp_pb2.Timestamp
    start_time: _timestamp_pb2.Timestamp
    end_time: _timestamp_pb2.Timestamp
    executor_id: str
    engine_handle: str
    exit_code: int
    result: _struct_pb2.Struct
    error: str
    log_tail: str
    cancel_requested: bool
    retry_of: str
    attempts: _containers.RepeatedCompositeFieldContainer[Attempt]
    queue: str
    next_attempt_time: _timestamp_pb2.Timestamp
    attempts_used: int
    attempts_handed_back: int
    hold_reason: str
    progress: _struct_pb2.Struct
    benefit: float
    waits_for: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, name: _Optional[str] = ..., table: _Optional[str] = ..., action: _Optional[str] = ..., state: _Optional[_Union[Operation.State, str]] = ..., attempt: _Optional[int] = ..., max_attempts: _Optional[int] = ..., priority: _Optional[int] = ..., trigger: _Optional[str] = ..., reason: _Optional[str] = ..., params: _Optional[_Mapping[str, str]] = ..., metrics: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ..., create_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., start_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., end_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., executor_id: _Optional[str] = ..., engine_handle: _Optional[str] = ..., exit_code: _Optional[int] = ..., result: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ..., error: _Optional[str] = ..., log_tail: _Optional[str] = ..., cancel_requested: _Optional[bool] = ..., retry_of: _Optional[str] = ..., attempts: _Optional[_Iterable[_Union[Attempt, _Mapping]]] = ..., queue: _Optional[str] = ..., next_attempt_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., attempts_used: _Optional[int] = ..., attempts_handed_back: _Optional[int] = ..., hold_reason: _Optional[str] = ..., progress: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ..., benefit: _Optional[float] = ..., waits_for: _Optional[_Iterable[str]] = ...) -> None: ...

class Attempt(_message.Message):
    __slots__ = ("attempt", "executor_id", "state", "start_time", "end_time", "engine_handle", "exit_code", "error", "log_tail", "result", "retry_time")
    class State(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
        __slots__ = ()
        STATE_UNSPECIFIED: _ClassVar[Attempt.State]
        RUNNING: _ClassVar[Attempt.State]
        SUCCEEDED: _ClassVar[Attempt.State]
        FAILED: _ClassVar[Attempt.State]
        CANCELLED: _ClassVar[Attempt.State]
        LOST: _ClassVar[Attempt.State]
        HANDED_BACK: _ClassVar[Attempt.State]
        SKIPPED: _ClassVar[Attempt.State]
    STATE_UNSPECIFIED: Attempt.State
    RUNNING: Attempt.State
    SUCCEEDED: Attempt.State
    FAILED: Attempt.State
    CANCELLED: Attempt.State
    LOST: Attempt.State
    HANDED_BACK: Attempt.State
    SKIPPED: Attempt.State
    ATTEMPT_FIELD_NUMBER: _ClassVar[int]
    EXECUTOR_ID_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    START_TIME_FIELD_NUMBER: _ClassVar[int]
    END_TIME_FIELD_NUMBER: _ClassVar[int]
    ENGINE_HANDLE_FIELD_NUMBER: _ClassVar[int]
    EXIT_CODE_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    LOG_TAIL_FIELD_NUMBER: _ClassVar[int]
    RESULT_FIELD_NUMBER: _ClassVar[int]
    RETRY_TIME_FIELD_NUMBER: _ClassVar[int]
    attempt: int
    executor_id: str
    state: Attempt.State
    start_time: _timestamp_pb2.Timestamp
    end_time: _timestamp_pb2.Timestamp
    engine_handle: str
    exit_code: int
    error: str
    log_tail: str
    result: _struct_pb2.Struct
    retry_time: _timestamp_pb2.Timestamp
    def __init__(self, attempt: _Optional[int] = ..., executor_id: _Optional[str] = ..., state: _Optional[_Union[Attempt.State, str]] = ..., start_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., end_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., engine_handle: _Optional[str] = ..., exit_code: _Optional[int] = ..., error: _Optional[str] = ..., log_tail: _Optional[str] = ..., result: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ..., retry_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class Queue(_message.Message):
    __slots__ = ("name", "max_running", "queued", "running")
    NAME_FIELD_NUMBER: _ClassVar[int]
    MAX_RUNNING_FIELD_NUMBER: _ClassVar[int]
    QUEUED_FIELD_NUMBER: _ClassVar[int]
    RUNNING_FIELD_NUMBER: _ClassVar[int]
    name: str
    max_running: int
    queued: int
    running: int
    def __init__(self, name: _Optional[str] = ..., max_running: _Optional[int] = ..., queued: _Optional[int] = ..., running: _Optional[int] = ...) -> None: ...

class ListQueuesRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class ListQueuesResponse(_message.Message):
    __slots__ = ("queues",)
    QUEUES_FIELD_NUMBER: _ClassVar[int]
    queues: _containers.RepeatedCompositeFieldContainer[Queue]
    def __init__(self, queues: _Optional[_Iterable[_Union[Queue, _Mapping]]] = ...) -> None: ...

class UpdateQueueRequest(_message.Message):
    __slots__ = ("name", "max_running")
    NAME_FIELD_NUMBER: _ClassVar[int]
    MAX_RUNNING_FIELD_NUMBER: _ClassVar[int]
    name: str
    max_running: int
    def __init__(self, name: _Optional[str] = ..., max_running: _Optional[int] = ...) -> None: ...

class GetOperationRequest(_message.Message):
    __slots__ = ("name",)
    NAME_FIELD_NUMBER: _ClassVar[int]
    name: str
    def __init__(self, name: _Optional[str] = ...) -> None: ...

class ListOperationsRequest(_message.Message):
    __slots__ = ("parent", "page_size", "page_token", "state", "action", "created_after", "created_before", "queue", "order_by")
    PARENT_FIELD_NUMBER: _ClassVar[int]
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    ACTION_FIELD_NUMBER: _ClassVar[int]
    CREATED_AFTER_FIELD_NUMBER: _ClassVar[int]
    CREATED_BEFORE_FIELD_NUMBER: _ClassVar[int]
    QUEUE_FIELD_NUMBER: _ClassVar[int]
    ORDER_BY_FIELD_NUMBER: _ClassVar[int]
    parent: str
    page_size: int
    page_token: str
    state: Operation.State
    action: str
    created_after: _timestamp_pb2.Timestamp
    created_before: _timestamp_pb2.Timestamp
    queue: str
    order_by: str
    def __init__(self, parent: _Optional[str] = ..., page_size: _Optional[int] = ..., page_token: _Optional[str] = ..., state: _Optional[_Union[Operation.State, str]] = ..., action: _Optional[str] = ..., created_after: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., created_before: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., queue: _Optional[str] = ..., order_by: _Optional[str] = ...) -> None: ...

class ListOperationsResponse(_message.Message):
    __slots__ = ("operations", "next_page_token")
    OPERATIONS_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    operations: _containers.RepeatedCompositeFieldContainer[Operation]
    next_page_token: str
    def __init__(self, operations: _Optional[_Iterable[_Union[Operation, _Mapping]]] = ..., next_page_token: _Optional[str] = ...) -> None: ...

class ActionHold(_message.Message):
    __slots__ = ("table", "action", "failures", "holds", "reason", "hold_time", "held_until", "last_operation", "released_by")
    TABLE_FIELD_NUMBER: _ClassVar[int]
    ACTION_FIELD_NUMBER: _ClassVar[int]
    FAILURES_FIELD_NUMBER: _ClassVar[int]
    HOLDS_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    HOLD_TIME_FIELD_NUMBER: _ClassVar[int]
    HELD_UNTIL_FIELD_NUMBER: _ClassVar[int]
    LAST_OPERATION_FIELD_NUMBER: _ClassVar[int]
    RELEASED_BY_FIELD_NUMBER: _ClassVar[int]
    table: str
    action: str
    failures: int
    holds: int
    reason: str
    hold_time: _timestamp_pb2.Timestamp
    held_until: _timestamp_pb2.Timestamp
    last_operation: str
    released_by: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, table: _Optional[str] = ..., action: _Optional[str] = ..., failures: _Optional[int] = ..., holds: _Optional[int] = ..., reason: _Optional[str] = ..., hold_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., held_until: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., last_operation: _Optional[str] = ..., released_by: _Optional[_Iterable[str]] = ...) -> None: ...

class ListHeldActionsRequest(_message.Message):
    __slots__ = ("parent", "action", "page_size", "page_token")
    PARENT_FIELD_NUMBER: _ClassVar[int]
    ACTION_FIELD_NUMBER: _ClassVar[int]
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    parent: str
    action: str
    page_size: int
    page_token: str
    def __init__(self, parent: _Optional[str] = ..., action: _Optional[str] = ..., page_size: _Optional[int] = ..., page_token: _Optional[str] = ...) -> None: ...

class ListHeldActionsResponse(_message.Message):
    __slots__ = ("holds", "next_page_token")
    HOLDS_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    holds: _containers.RepeatedCompositeFieldContainer[ActionHold]
    next_page_token: str
    def __init__(self, holds: _Optional[_Iterable[_Union[ActionHold, _Mapping]]] = ..., next_page_token: _Optional[str] = ...) -> None: ...

class CancelOperationRequest(_message.Message):
    __slots__ = ("name",)
    NAME_FIELD_NUMBER: _ClassVar[int]
    name: str
    def __init__(self, name: _Optional[str] = ...) -> None: ...

class ReportJobResultRequest(_message.Message):
    __slots__ = ("operation", "attempt", "token", "result_json")
    OPERATION_FIELD_NUMBER: _ClassVar[int]
    ATTEMPT_FIELD_NUMBER: _ClassVar[int]
    TOKEN_FIELD_NUMBER: _ClassVar[int]
    RESULT_JSON_FIELD_NUMBER: _ClassVar[int]
    operation: str
    attempt: int
    token: str
    result_json: str
    def __init__(self, operation: _Optional[str] = ..., attempt: _Optional[int] = ..., token: _Optional[str] = ..., result_json: _Optional[str] = ...) -> None: ...

class ReportJobResultResponse(_message.Message):
    __slots__ = ("first",)
    FIRST_FIELD_NUMBER: _ClassVar[int]
    first: bool
    def __init__(self, first: _Optional[bool] = ...) -> None: ...

class RetryOperationRequest(_message.Message):
    __slots__ = ("name",)
    NAME_FIELD_NUMBER: _ClassVar[int]
    name: str
    def __init__(self, name: _Optional[str] = ...) -> None: ...

class TriggerOperationRequest(_message.Message):
    __slots__ = ("parent", "action", "params", "reason", "request_id")
    class ParamsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    PARENT_FIELD_NUMBER: _ClassVar[int]
    ACTION_FIELD_NUMBER: _ClassVar[int]
    PARAMS_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    parent: str
    action: str
    params: _containers.ScalarMap[str, str]
    reason: str
    request_id: str
    def __init__(self, parent: _Optional[str] = ..., action: _Optional[str] = ..., params: _Optional[_Mapping[str, str]] = ..., reason: _Optional[str] = ..., request_id: _Optional[str] = ...) -> None: ...

class ExplainTableRequest(_message.Message):
    __slots__ = ("name",)
    NAME_FIELD_NUMBER: _ClassVar[int]
    name: str
    def __init__(self, name: _Optional[str] = ...) -> None: ...

class ActionExplanation(_message.Message):
    __slots__ = ("action", "decided", "decide_time", "should_run", "reason", "metrics", "operation", "active_operation", "scheduler_id", "active_state", "benefit", "hold")
    ACTION_FIELD_NUMBER: _ClassVar[int]
    DECIDED_FIELD_NUMBER: _ClassVar[int]
    DECIDE_TIME_FIELD_NUMBER: _ClassVar[int]
    SHOULD_RUN_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    METRICS_FIELD_NUMBER: _ClassVar[int]
    OPERATION_FIELD_NUMBER: _ClassVar[int]
    ACTIVE_OPERATION_FIELD_NUMBER: _ClassVar[int]
    SCHEDULER_ID_FIELD_NUMBER: _ClassVar[int]
    ACTIVE_STATE_FIELD_NUMBER: _ClassVar[int]
    BENEFIT_FIELD_NUMBER: _ClassVar[int]
    HOLD_FIELD_NUMBER: _ClassVar[int]
    action: str
    decided: bool
    decide_time: _timestamp_pb2.Timestamp
    should_run: bool
    reason: str
    metrics: _struct_pb2.Struct
    operation: str
    active_operation: str
    scheduler_id: str
    active_state: Operation.State
    benefit: float
    hold: ActionHold
    def __init__(self, action: _Optional[str] = ..., decided: _Optional[bool] = ..., decide_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., should_run: _Optional[bool] = ..., reason: _Optional[str] = ..., metrics: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ..., operation: _Optional[str] = ..., active_operation: _Optional[str] = ..., scheduler_id: _Optional[str] = ..., active_state: _Optional[_Union[Operation.State, str]] = ..., benefit: _Optional[float] = ..., hold: _Optional[_Union[ActionHold, _Mapping]] = ...) -> None: ...

class PolicyValue(_message.Message):
    __slots__ = ("key", "value", "source", "default", "unit", "doc")
    KEY_FIELD_NUMBER: _ClassVar[int]
    VALUE_FIELD_NUMBER: _ClassVar[int]
    SOURCE_FIELD_NUMBER: _ClassVar[int]
    DEFAULT_FIELD_NUMBER: _ClassVar[int]
    UNIT_FIELD_NUMBER: _ClassVar[int]
    DOC_FIELD_NUMBER: _ClassVar[int]
    key: str
    value: str
    source: str
    default: str
    unit: str
    doc: str
    def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ..., source: _Optional[str] = ..., default: _Optional[str] = ..., unit: _Optional[str] = ..., doc: _Optional[str] = ...) -> None: ...

class ExplainTableResponse(_message.Message):
    __slots__ = ("table", "state", "actions", "policy", "check_time", "health", "partitions", "read_profile")
    TABLE_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    ACTIONS_FIELD_NUMBER: _ClassVar[int]
    POLICY_FIELD_NUMBER: _ClassVar[int]
    CHECK_TIME_FIELD_NUMBER: _ClassVar[int]
    HEALTH_FIELD_NUMBER: _ClassVar[int]
    PARTITIONS_FIELD_NUMBER: _ClassVar[int]
    READ_PROFILE_FIELD_NUMBER: _ClassVar[int]
    table: str
    state: Table.State
    actions: _containers.RepeatedCompositeFieldContainer[ActionExplanation]
    policy: _containers.RepeatedCompositeFieldContainer[PolicyValue]
    check_time: _timestamp_pb2.Timestamp
    health: TableHealth
    partitions: _containers.RepeatedCompositeFieldContainer[PartitionFiles]
    read_profile: ReadProfile
    def __init__(self, table: _Optional[str] = ..., state: _Optional[_Union[Table.State, str]] = ..., actions: _Optional[_Iterable[_Union[ActionExplanation, _Mapping]]] = ..., policy: _Optional[_Iterable[_Union[PolicyValue, _Mapping]]] = ..., check_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., health: _Optional[_Union[TableHealth, _Mapping]] = ..., partitions: _Optional[_Iterable[_Union[PartitionFiles, _Mapping]]] = ..., read_profile: _Optional[_Union[ReadProfile, _Mapping]] = ...) -> None: ...

class TableHealth(_message.Message):
    __slots__ = ("score", "parts", "inspect_time")
    SCORE_FIELD_NUMBER: _ClassVar[int]
    PARTS_FIELD_NUMBER: _ClassVar[int]
    INSPECT_TIME_FIELD_NUMBER: _ClassVar[int]
    score: int
    parts: _containers.RepeatedCompositeFieldContainer[HealthPart]
    inspect_time: _timestamp_pb2.Timestamp
    def __init__(self, score: _Optional[int] = ..., parts: _Optional[_Iterable[_Union[HealthPart, _Mapping]]] = ..., inspect_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class HealthPart(_message.Message):
    __slots__ = ("name", "value", "unit", "penalty", "max_penalty", "detail")
    NAME_FIELD_NUMBER: _ClassVar[int]
    VALUE_FIELD_NUMBER: _ClassVar[int]
    UNIT_FIELD_NUMBER: _ClassVar[int]
    PENALTY_FIELD_NUMBER: _ClassVar[int]
    MAX_PENALTY_FIELD_NUMBER: _ClassVar[int]
    DETAIL_FIELD_NUMBER: _ClassVar[int]
    name: str
    value: float
    unit: str
    penalty: int
    max_penalty: int
    detail: str
    def __init__(self, name: _Optional[str] = ..., value: _Optional[float] = ..., unit: _Optional[str] = ..., penalty: _Optional[int] = ..., max_penalty: _Optional[int] = ..., detail: _Optional[str] = ...) -> None: ...

class PartitionFiles(_message.Message):
    __slots__ = ("partition", "data_files", "small_files", "bytes", "delete_files")
    PARTITION_FIELD_NUMBER: _ClassVar[int]
    DATA_FILES_FIELD_NUMBER: _ClassVar[int]
    SMALL_FILES_FIELD_NUMBER: _ClassVar[int]
    BYTES_FIELD_NUMBER: _ClassVar[int]
    DELETE_FILES_FIELD_NUMBER: _ClassVar[int]
    partition: str
    data_files: int
    small_files: int
    bytes: int
    delete_files: int
    def __init__(self, partition: _Optional[str] = ..., data_files: _Optional[int] = ..., small_files: _Optional[int] = ..., bytes: _Optional[int] = ..., delete_files: _Optional[int] = ...) -> None: ...

class GetTableHistoryRequest(_message.Message):
    __slots__ = ("name", "start_time", "end_time")
    NAME_FIELD_NUMBER: _ClassVar[int]
    START_TIME_FIELD_NUMBER: _ClassVar[int]
    END_TIME_FIELD_NUMBER: _ClassVar[int]
    name: str
    start_time: _timestamp_pb2.Timestamp
    end_time: _timestamp_pb2.Timestamp
    def __init__(self, name: _Optional[str] = ..., start_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., end_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class TableHistory(_message.Message):
    __slots__ = ("table", "points", "markers")
    TABLE_FIELD_NUMBER: _ClassVar[int]
    POINTS_FIELD_NUMBER: _ClassVar[int]
    MARKERS_FIELD_NUMBER: _ClassVar[int]
    table: str
    points: _containers.RepeatedCompositeFieldContainer[TableHistoryPoint]
    markers: _containers.RepeatedCompositeFieldContainer[OperationMarker]
    def __init__(self, table: _Optional[str] = ..., points: _Optional[_Iterable[_Union[TableHistoryPoint, _Mapping]]] = ..., markers: _Optional[_Iterable[_Union[OperationMarker, _Mapping]]] = ...) -> None: ...

class TableHistoryPoint(_message.Message):
    __slots__ = ("time", "resolution", "data_files", "small_files", "mean_file_bytes", "delete_files", "snapshots", "manifests", "total_bytes", "health_score")
    TIME_FIELD_NUMBER: _ClassVar[int]
    RESOLUTION_FIELD_NUMBER: _ClassVar[int]
    DATA_FILES_FIELD_NUMBER: _ClassVar[int]
    SMALL_FILES_FIELD_NUMBER: _ClassVar[int]
    MEAN_FILE_BYTES_FIELD_NUMBER: _ClassVar[int]
    DELETE_FILES_FIELD_NUMBER: _ClassVar[int]
    SNAPSHOTS_FIELD_NUMBER: _ClassVar[int]
    MANIFESTS_FIELD_NUMBER: _ClassVar[int]
    TOTAL_BYTES_FIELD_NUMBER: _ClassVar[int]
    HEALTH_SCORE_FIELD_NUMBER: _ClassVar[int]
    time: _timestamp_pb2.Timestamp
    resolution: str
    data_files: int
    small_files: int
    mean_file_bytes: int
    delete_files: int
    snapshots: int
    manifests: int
    total_bytes: int
    health_score: int
    def __init__(self, time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., resolution: _Optional[str] = ..., data_files: _Optional[int] = ..., small_files: _Optional[int] = ..., mean_file_bytes: _Optional[int] = ..., delete_files: _Optional[int] = ..., snapshots: _Optional[int] = ..., manifests: _Optional[int] = ..., total_bytes: _Optional[int] = ..., health_score: _Optional[int] = ...) -> None: ...

class OperationMarker(_message.Message):
    __slots__ = ("time", "operation", "action", "state")
    TIME_FIELD_NUMBER: _ClassVar[int]
    OPERATION_FIELD_NUMBER: _ClassVar[int]
    ACTION_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    time: _timestamp_pb2.Timestamp
    operation: str
    action: str
    state: Operation.State
    def __init__(self, time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., operation: _Optional[str] = ..., action: _Optional[str] = ..., state: _Optional[_Union[Operation.State, str]] = ...) -> None: ...

class GetFleetStatusRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class FleetStatus(_message.Message):
    __slots__ = ("time", "processes", "tables_by_state", "health_bands", "operations_queued", "operations_running", "operations_last_24h", "commits_per_minute")
    class TablesByStateEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: int
        def __init__(self, key: _Optional[str] = ..., value: _Optional[int] = ...) -> None: ...
    class OperationsLast24hEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: int
        def __init__(self, key: _Optional[str] = ..., value: _Optional[int] = ...) -> None: ...
    TIME_FIELD_NUMBER: _ClassVar[int]
    PROCESSES_FIELD_NUMBER: _ClassVar[int]
    TABLES_BY_STATE_FIELD_NUMBER: _ClassVar[int]
    HEALTH_BANDS_FIELD_NUMBER: _ClassVar[int]
    OPERATIONS_QUEUED_FIELD_NUMBER: _ClassVar[int]
    OPERATIONS_RUNNING_FIELD_NUMBER: _ClassVar[int]
    OPERATIONS_LAST_24H_FIELD_NUMBER: _ClassVar[int]
    COMMITS_PER_MINUTE_FIELD_NUMBER: _ClassVar[int]
    time: _timestamp_pb2.Timestamp
    processes: _containers.RepeatedCompositeFieldContainer[ProcessStatus]
    tables_by_state: _containers.ScalarMap[str, int]
    health_bands: _containers.RepeatedCompositeFieldContainer[HealthBand]
    operations_queued: int
    operations_running: int
    operations_last_24h: _containers.ScalarMap[str, int]
    commits_per_minute: float
    def __init__(self, time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., processes: _Optional[_Iterable[_Union[ProcessStatus, _Mapping]]] = ..., tables_by_state: _Optional[_Mapping[str, int]] = ..., health_bands: _Optional[_Iterable[_Union[HealthBand, _Mapping]]] = ..., operations_queued: _Optional[int] = ..., operations_running: _Optional[int] = ..., operations_last_24h: _Optional[_Mapping[str, int]] = ..., commits_per_minute: _Optional[float] = ...) -> None: ...

class ProcessStatus(_message.Message):
    __slots__ = ("id", "kind", "host", "start_time", "heartbeat_time", "alive", "leader", "shards", "running_operations")
    ID_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    HOST_FIELD_NUMBER: _ClassVar[int]
    START_TIME_FIELD_NUMBER: _ClassVar[int]
    HEARTBEAT_TIME_FIELD_NUMBER: _ClassVar[int]
    ALIVE_FIELD_NUMBER: _ClassVar[int]
    LEADER_FIELD_NUMBER: _ClassVar[int]
    SHARDS_FIELD_NUMBER: _ClassVar[int]
    RUNNING_OPERATIONS_FIELD_NUMBER: _ClassVar[int]
    id: str
    kind: str
    host: str
    start_time: _timestamp_pb2.Timestamp
    heartbeat_time: _timestamp_pb2.Timestamp
    alive: bool
    leader: bool
    shards: _containers.RepeatedScalarFieldContainer[int]
    running_operations: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, id: _Optional[str] = ..., kind: _Optional[str] = ..., host: _Optional[str] = ..., start_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., heartbeat_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., alive: _Optional[bool] = ..., leader: _Optional[bool] = ..., shards: _Optional[_Iterable[int]] = ..., running_operations: _Optional[_Iterable[str]] = ...) -> None: ...

class HealthBand(_message.Message):
    __slots__ = ("band", "min_score", "max_score", "tables")
    BAND_FIELD_NUMBER: _ClassVar[int]
    MIN_SCORE_FIELD_NUMBER: _ClassVar[int]
    MAX_SCORE_FIELD_NUMBER: _ClassVar[int]
    TABLES_FIELD_NUMBER: _ClassVar[int]
    band: str
    min_score: int
    max_score: int
    tables: int
    def __init__(self, band: _Optional[str] = ..., min_score: _Optional[int] = ..., max_score: _Optional[int] = ..., tables: _Optional[int] = ...) -> None: ...

class SummarizeOperationsRequest(_message.Message):
    __slots__ = ("parent", "days")
    PARENT_FIELD_NUMBER: _ClassVar[int]
    DAYS_FIELD_NUMBER: _ClassVar[int]
    parent: str
    days: int
    def __init__(self, parent: _Optional[str] = ..., days: _Optional[int] = ...) -> None: ...

class SummarizeOperationsResponse(_message.Message):
    __slots__ = ("days",)
    DAYS_FIELD_NUMBER: _ClassVar[int]
    days: _containers.RepeatedCompositeFieldContainer[DaySummary]
    def __init__(self, days: _Optional[_Iterable[_Union[DaySummary, _Mapping]]] = ...) -> None: ...

class DaySummary(_message.Message):
    __slots__ = ("day", "succeeded", "failed", "skipped", "cancelled", "data_files_before", "data_files_after", "bytes_rewritten")
    DAY_FIELD_NUMBER: _ClassVar[int]
    SUCCEEDED_FIELD_NUMBER: _ClassVar[int]
    FAILED_FIELD_NUMBER: _ClassVar[int]
    SKIPPED_FIELD_NUMBER: _ClassVar[int]
    CANCELLED_FIELD_NUMBER: _ClassVar[int]
    DATA_FILES_BEFORE_FIELD_NUMBER: _ClassVar[int]
    DATA_FILES_AFTER_FIELD_NUMBER: _ClassVar[int]
    BYTES_REWRITTEN_FIELD_NUMBER: _ClassVar[int]
    day: str
    succeeded: int
    failed: int
    skipped: int
    cancelled: int
    data_files_before: int
    data_files_after: int
    bytes_rewritten: int
    def __init__(self, day: _Optional[str] = ..., succeeded: _Optional[int] = ..., failed: _Optional[int] = ..., skipped: _Optional[int] = ..., cancelled: _Optional[int] = ..., data_files_before: _Optional[int] = ..., data_files_after: _Optional[int] = ..., bytes_rewritten: _Optional[int] = ...) -> None: ...

class ReadProfile(_message.Message):
    __slots__ = ("reports", "recent_scans", "filtered_share", "kept_share", "columns", "column_sets", "summary")
    REPORTS_FIELD_NUMBER: _ClassVar[int]
    RECENT_SCANS_FIELD_NUMBER: _ClassVar[int]
    FILTERED_SHARE_FIELD_NUMBER: _ClassVar[int]
    KEPT_SHARE_FIELD_NUMBER: _ClassVar[int]
    COLUMNS_FIELD_NUMBER: _ClassVar[int]
    COLUMN_SETS_FIELD_NUMBER: _ClassVar[int]
    SUMMARY_FIELD_NUMBER: _ClassVar[int]
    reports: int
    recent_scans: float
    filtered_share: float
    kept_share: float
    columns: _containers.RepeatedCompositeFieldContainer[ColumnRead]
    column_sets: _containers.RepeatedCompositeFieldContainer[ColumnSetRead]
    summary: str
    def __init__(self, reports: _Optional[int] = ..., recent_scans: _Optional[float] = ..., filtered_share: _Optional[float] = ..., kept_share: _Optional[float] = ..., columns: _Optional[_Iterable[_Union[ColumnRead, _Mapping]]] = ..., column_sets: _Optional[_Iterable[_Union[ColumnSetRead, _Mapping]]] = ..., summary: _Optional[str] = ...) -> None: ...

class ColumnRead(_message.Message):
    __slots__ = ("column", "operator", "share", "weight")
    COLUMN_FIELD_NUMBER: _ClassVar[int]
    OPERATOR_FIELD_NUMBER: _ClassVar[int]
    SHARE_FIELD_NUMBER: _ClassVar[int]
    WEIGHT_FIELD_NUMBER: _ClassVar[int]
    column: str
    operator: str
    share: float
    weight: float
    def __init__(self, column: _Optional[str] = ..., operator: _Optional[str] = ..., share: _Optional[float] = ..., weight: _Optional[float] = ...) -> None: ...

class ColumnSetRead(_message.Message):
    __slots__ = ("columns", "share")
    COLUMNS_FIELD_NUMBER: _ClassVar[int]
    SHARE_FIELD_NUMBER: _ClassVar[int]
    columns: _containers.RepeatedScalarFieldContainer[str]
    share: float
    def __init__(self, columns: _Optional[_Iterable[str]] = ..., share: _Optional[float] = ...) -> None: ...
