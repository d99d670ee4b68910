from django.db import migrations


class Migration(migrations.Migration):
    """The evaluation's own versions are gone (0005 copied them to the library); Variant.prompt is a library
    version."""

    dependencies = [("evaluate", "0005_copy_prompts_to_library")]

    operations = [
        migrations.RemoveField(model_name="variant", name="prompt"),
        migrations.RenameField(model_name="variant", old_name="library_version", new_name="prompt"),
        migrations.DeleteModel(name="PromptVersion"),
    ]
