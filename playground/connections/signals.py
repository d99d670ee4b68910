"""What a connection tells the apps above it. The catalog listens (it sits above connections: connections never
import it)."""

from django.dispatch import Signal

# Sent (with `asend`) once a user saved a new connection: `connection`, `user`. A receiver answers (words, ok);
# the catalog's fetches the provider's model list through the gate.
connection_added = Signal()
