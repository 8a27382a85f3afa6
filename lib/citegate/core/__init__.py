"""The foundation every layer stands on: the typed `PipelineConfig` with the named design numbers
(`DESIGN`, `config`), how its fields are declared (`config_fields`), the reference page rendered
from them (`config_reference`), the configs a name means (`config_files`), the error types
(`errors`), every filesystem location (`paths`), the searchable unit `Fragment` (`fragments`), the
value types and outcome enums the stages pass along (`types`), language guesses and stopword lists
(`text`) and the secret scrubber (`redact`). Layer rule: the lowest layer; it imports no other
citegate subpackage, only the standard library and small third-party libraries (PyYAML). Nothing
here touches the database or a model.
"""
