# %% [markdown]
# # Lab: TinyViT8 from scratch
#
# This lab is being written.

# %%
print("TinyViT8 lab")
