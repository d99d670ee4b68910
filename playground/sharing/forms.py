from django import forms

from playground.sharing.models import EXPIRY_CHOICES, Share


class ShareForm(forms.Form):
    visibility = forms.ChoiceField(choices=Share.VISIBILITIES, initial=Share.ANYONE, widget=forms.RadioSelect)
    expiry = forms.ChoiceField(choices=EXPIRY_CHOICES, initial="7d", label="Expires after")
    live = forms.BooleanField(required=False, label="Live: viewers follow new turns and answers as they stream")


class ForkForm(forms.Form):
    connection = forms.TypedChoiceField(coerce=int, label="Continue with connection")

    def __init__(self, *args, connections=(), **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["connection"].choices = [(c.pk, c.name) for c in connections]
