"""Job input schemas: field types (types), the shared options (vocabulary) and the base model
(base) that turns a violation into one InputError naming the field."""
