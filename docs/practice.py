# %% [markdown]
# # Practice
#
# This page is being written.

# %%
print("practice")
