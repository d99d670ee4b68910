"""The connection and model picker that the rerank and speech forms share."""

from django import forms

from playground.catalog.models import CatalogModel
from playground.connections.models import Connection


def pick_connection(connections, wanted) -> Connection | None:
    """The connection among `connections` whose pk is `wanted` (a pk, its string or a Connection), else the first."""
    if wanted:
        try:
            found = connections.filter(pk=int(getattr(wanted, "pk", wanted))).first()
        except (TypeError, ValueError):
            found = None
        if found:
            return found
    return connections.first()


class ModelPickerForm(forms.Form):
    """A form that starts by picking one of the user's connections and one of its models of `model_kind`.

    `chosen_connection` and `chosen_model` are the submitted (or initial) ones when they exist, else the first
    of each, so the page always has something selected; `models` lists the connection's models of that kind.
    The template fragment is catalog/_model_picker.html.
    """

    model_kind = ""
    connection = forms.ModelChoiceField(queryset=Connection.objects.none(), empty_label=None)
    model = forms.ChoiceField()

    def __init__(self, *args, user, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["connection"].queryset = Connection.objects.for_user(user)
        self.fields["model"].error_messages["invalid_choice"] = (
            f"model: choose a {self.model_kind} model of this connection."
        )
        self.chosen_connection = pick_connection(self.fields["connection"].queryset, self._wanted("connection"))
        self.models = (
            list(CatalogModel.objects.for_connection(self.chosen_connection, kind=self.model_kind))
            if self.chosen_connection
            else []
        )
        self.fields["model"].choices = [(m.model_id, m.model_id) for m in self.models]
        wanted_model = self._wanted("model")
        self.chosen_model = next((m for m in self.models if m.model_id == wanted_model), None) or (
            self.models[0] if self.models else None
        )
        if self.chosen_connection:
            self.initial.setdefault("connection", self.chosen_connection.pk)
        if self.chosen_model:
            self.initial["model"] = self.chosen_model.model_id

    def _wanted(self, name: str):
        return self.data.get(name) if self.is_bound else self.initial.get(name)
