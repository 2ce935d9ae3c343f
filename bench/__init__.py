"""lsiorm's benchmark suite against boto3, PynamoDB and dyntastic; run it with ``make bench``."""
